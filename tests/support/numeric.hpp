// SPDX-License-Identifier: Apache-2.0
#pragma once
// Test helpers: deterministic inputs, tail-length sweeps and error bounds from float32 arithmetic.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace emha::test {

// Unit roundoff of float32 (2^-24): every correctly rounded float op has relative error <= u.
inline constexpr double u32 = 1.0 / 16777216.0;

// Lengths that hit every tail of every build's vector width (1, 4, 8, 16 lanes) and
// micro-kernel tile (4, 6, 8 rows; 4, 8, 12, 16, 32 columns), plus odd primes.
inline constexpr std::size_t tail_sizes[] = {1, 2, 3, 5, 7, 8, 9, 11, 13, 15, 16, 17, 31, 33, 37, 64, 127};

// Deterministic uniform values in [lo, hi) (a 64-bit LCG; same on every target).
inline void fill_uniform(float* p, std::size_t n, std::uint64_t seed, float lo = -1.0f,
                         float hi = 1.0f) {
  std::uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (std::size_t i = 0; i < n; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const double r = double(s >> 11) / double(1ull << 53);
    p[i] = static_cast<float>(lo + (hi - lo) * r);
  }
}

// Deterministic int8 values over [-127, 127] with both ends present (int8 weights, an int8 cache).
inline void fill_int8(std::int8_t* q, std::size_t count, std::uint64_t seed) {
  std::uint64_t s = seed * 2862933555777941757ull + 3037000493ull;
  for (std::size_t i = 0; i < count; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    q[i] = static_cast<std::int8_t>(int((s >> 33) % 255) - 127);
  }
  if (count) q[0] = -127;
  if (count > 1) q[count - 1] = 127;
}

inline std::vector<float> uniform(std::size_t n, std::uint64_t seed, float lo = -1.0f,
                                  float hi = 1.0f) {
  std::vector<float> v(n);
  fill_uniform(v.data(), n, seed, lo, hi);
  return v;
}

}  // namespace emha::test

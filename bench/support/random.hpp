// SPDX-License-Identifier: Apache-2.0
#pragma once
// Deterministic benchmark inputs: the same numbers on every run and every target.

#include <cstddef>
#include <cstdint>

#include "support/aligned.hpp"

namespace emha_bench {

// n floats uniform in [lo, hi), cache-line aligned, from a 64-bit LCG seeded with `seed` (no
// <random>: its distributions differ between standard libraries).
inline Floats uniform(std::size_t n, std::uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  Floats v(n);
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (float& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const float u = float(s >> 40) * (1.0f / float(1 << 24));  // [0, 1), 24 random bits
    x = lo + (hi - lo) * u;
  }
  return v;
}

}  // namespace emha_bench

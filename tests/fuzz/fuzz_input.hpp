// SPDX-License-Identifier: Apache-2.0
#pragma once
// Turns libFuzzer's bytes into choices: each take_*() consumes the next bytes (zeros once they
// run out, so every input is a complete case), and a seeded PRNG (splitmix64) fills buffers, so
// that the fuzzer steers shapes, options and magnitudes with a few bytes, not kilobytes of floats.

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace emha::fuzz {

class Input {
 public:
  Input(const std::uint8_t* data, std::size_t size) noexcept : data_(data), size_(size) {}

  std::uint8_t u8() noexcept { return pos_ < size_ ? data_[pos_++] : 0; }
  std::uint64_t u64() noexcept {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = v << 8 | u8();
    return v;
  }
  // A value in [0, n) (n > 0): one byte when n <= 256, else two.
  std::size_t below(std::size_t n) noexcept {
    const std::size_t raw = n <= 256 ? u8() : std::size_t(u8()) << 8 | u8();
    return raw % n;
  }
  bool one_in(unsigned n) noexcept { return u8() % n == 0; }
  // A signed exponent in [lo, hi].
  int exponent(int lo, int hi) noexcept { return lo + int(below(std::size_t(hi - lo + 1))); }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

class Random {
 public:
  explicit Random(std::uint64_t seed) noexcept : state_(seed) {}
  std::uint64_t next() noexcept {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1].
  float symmetric() noexcept { return float(double(next() >> 40) / double(1ull << 23) - 1.0); }
  std::size_t below(std::size_t n) noexcept { return std::size_t(next() % n); }

 private:
  std::uint64_t state_;
};

}  // namespace emha::fuzz

// SPDX-License-Identifier: Apache-2.0
#pragma once
// Console lines over semihosting for the Cortex-M firmware and device benchmarks, without printf
// (newlib's stdio allocates its buffers on the heap). A Line formats into a fixed buffer and is
// written with one SYS_WRITE0 when it ends; what does not fit is cut off.
//
//   emha::cortex_m::Line() << "gemm " << m << "x" << n << ": " << seconds << " s";

#include <cstddef>
#include <cstdint>

#include "semihosting.hpp"

namespace emha::cortex_m {

// An unsigned number shown in hexadecimal: Line() << Hex{value}.
struct Hex {
  std::uint32_t value;
};

class Line {
 public:
  Line() noexcept = default;
  Line(const Line&) = delete;
  Line& operator=(const Line&) = delete;
  ~Line() { flush(); }

  Line& operator<<(const char* s) noexcept {
    while (s && *s) put(*s++);
    return *this;
  }
  Line& operator<<(char c) noexcept {
    put(c);
    return *this;
  }
  Line& operator<<(unsigned long long v) noexcept {
    char digits[20];
    int n = 0;
    do {
      digits[n++] = char('0' + v % 10);
      v /= 10;
    } while (v);
    while (n) put(digits[--n]);
    return *this;
  }
  Line& operator<<(long long v) noexcept {
    if (v < 0) put('-');
    return *this << (v < 0 ? 0ull - static_cast<unsigned long long>(v) : static_cast<unsigned long long>(v));
  }
  Line& operator<<(unsigned long v) noexcept { return *this << static_cast<unsigned long long>(v); }
  Line& operator<<(unsigned v) noexcept { return *this << static_cast<unsigned long long>(v); }
  Line& operator<<(long v) noexcept { return *this << static_cast<long long>(v); }
  Line& operator<<(int v) noexcept { return *this << static_cast<long long>(v); }
  Line& operator<<(Hex h) noexcept {
    *this << "0x";
    for (int shift = 28; shift >= 0; shift -= 4) put("0123456789abcdef"[(h.value >> shift) & 0xf]);
    return *this;
  }
  // Four significant digits: fixed point for 1e-3 <= |v| < 1e6, scientific otherwise.
  Line& operator<<(double v) noexcept {
    if (v != v) return *this << "nan";
    if (v < 0) {
      put('-');
      v = -v;
    }
    if (v > 1.7e308) return *this << "inf";
    if (v == 0) return *this << "0";
    if (v >= 1e-3 && v < 1e6) {
      const int decimals = v >= 1000 ? 0 : v >= 100 ? 1 : v >= 10 ? 2 : v >= 1 ? 3 : v >= 0.1 ? 4 : v >= 0.01 ? 5 : 6;
      std::uint64_t scale = 1;
      for (int i = 0; i < decimals; ++i) scale *= 10;
      const std::uint64_t fixed = static_cast<std::uint64_t>(v * double(scale) + 0.5);
      *this << static_cast<unsigned long long>(fixed / scale);
      if (decimals) {
        put('.');
        std::uint64_t frac = fixed % scale;
        for (std::uint64_t d = scale / 10; d; d /= 10) {
          put(char('0' + frac / d));
          frac %= d;
        }
      }
      return *this;
    }
    int exponent = 0;
    while (v >= 10) {
      v /= 10;
      ++exponent;
    }
    while (v < 1) {
      v *= 10;
      --exponent;
    }
    std::uint64_t mantissa = static_cast<std::uint64_t>(v * 1000 + 0.5);  // 1000..10000
    if (mantissa >= 10000) {
      mantissa /= 10;
      ++exponent;
    }
    *this << static_cast<unsigned long long>(mantissa / 1000) << '.';
    put(char('0' + mantissa / 100 % 10));
    put(char('0' + mantissa / 10 % 10));
    put(char('0' + mantissa % 10));
    return *this << 'e' << exponent;
  }
  Line& operator<<(float v) noexcept { return *this << static_cast<double>(v); }

 private:
  void put(char c) noexcept {
    if (size_ < capacity) text_[size_++] = c;
  }
  void flush() noexcept {
    text_[size_++] = '\n';
    text_[size_] = '\0';
    semihosting::write0(text_);
  }

  static constexpr std::size_t capacity = 200;
  char text_[capacity + 2];
  std::size_t size_ = 0;
};

}  // namespace emha::cortex_m

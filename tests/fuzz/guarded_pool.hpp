// SPDX-License-Identifier: Apache-2.0
#pragma once
// Buffers for one fuzz case, carved from a static pool (no heap in the harness either), each
// with guard bytes on both sides. intact() proves that nothing wrote outside any buffer; a
// buffer's own bytes are compared against a snapshot by the harness.

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace emha::fuzz {

template <std::size_t Bytes>
class GuardedPool {
 public:
  static constexpr std::size_t guard = 64;
  static constexpr unsigned char pattern = 0xA5;

  void reset() noexcept {
    used_ = 0;
    count_ = 0;
  }
  // `count` elements of T, 64-byte aligned, with guards before and after; null if the pool or
  // the table of buffers is full.
  template <class T>
  T* take(std::size_t count) noexcept {
    const std::size_t bytes = (count * sizeof(T) + 63) / 64 * 64;
    if (count_ == max_buffers || used_ + bytes + 2 * guard > Bytes) return nullptr;
    unsigned char* p = storage_ + used_;
    std::memset(p, pattern, guard);
    std::memset(p + guard + count * sizeof(T), pattern, bytes - count * sizeof(T) + guard);
    ranges_[count_++] = {p + guard + count * sizeof(T), bytes - count * sizeof(T) + guard, p, guard};
    used_ += bytes + 2 * guard;
    return reinterpret_cast<T*>(p + guard);
  }
  bool intact() const noexcept {
    for (std::size_t i = 0; i < count_; ++i) {
      if (!all_pattern(ranges_[i].before, ranges_[i].before_bytes)) return false;
      if (!all_pattern(ranges_[i].after, ranges_[i].after_bytes)) return false;
    }
    return true;
  }

 private:
  __attribute__((no_sanitize("coverage"), noinline)) static bool all_pattern(const unsigned char* p, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i)
      if (p[i] != pattern) return false;
    return true;
  }
  struct Guards {
    unsigned char* after;
    std::size_t after_bytes;
    unsigned char* before;
    std::size_t before_bytes;
  };
  static constexpr std::size_t max_buffers = 32;
  alignas(64) unsigned char storage_[Bytes];
  Guards ranges_[max_buffers];
  std::size_t used_ = 0;
  std::size_t count_ = 0;
};

}  // namespace emha::fuzz

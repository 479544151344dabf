// SPDX-License-Identifier: Apache-2.0
#pragma once
// Benchmark buffers start on a 64-byte cache line, as emha's arena buffers do and as inference
// runtimes align their tensors. std::vector's malloc gives 16 bytes: then every other 32-byte
// load or store along a row spans two cache lines, which cost gemm_f32 1.5-2% in the median and
// up to 7% on single shapes on the Zen 4 here (`ab/ab.sh HEAD HEAD --offset-bytes 16`,
// bench/README.md "Alignment"), charged to whichever kernel ran. Every implementation in a
// benchmark gets the same buffers.

#include <cstddef>
#include <new>
#include <vector>

namespace emha_bench {

inline constexpr std::size_t buffer_alignment = 64;  // bytes

template <class T>
struct LineAllocator {
  using value_type = T;
  LineAllocator() = default;
  template <class U>
  LineAllocator(const LineAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{buffer_alignment}));
  }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, std::align_val_t{buffer_alignment}); }
  template <class U>
  bool operator==(const LineAllocator<U>&) const noexcept { return true; }
  template <class U>
  bool operator!=(const LineAllocator<U>&) const noexcept { return false; }
};

// A float buffer whose first element starts a cache line.
using Floats = std::vector<float, LineAllocator<float>>;

}  // namespace emha_bench

// SPDX-License-Identifier: Apache-2.0
#pragma once
// A pointer with its element count, so that layer calls can refuse buffers that are too small.

#include <array>
#include <cstddef>

namespace emha {

template <class T>
struct Span {
  T* data = nullptr;
  std::size_t size = 0;

  constexpr Span() noexcept = default;
  constexpr Span(T* p, std::size_t n) noexcept : data(p), size(n) {}
  template <std::size_t N>
  constexpr Span(T (&a)[N]) noexcept : data(a), size(N) {}
  template <class U, std::size_t N>
  constexpr Span(std::array<U, N>& a) noexcept : data(a.data()), size(N) {}
  template <class U, std::size_t N>
  constexpr Span(const std::array<U, N>& a) noexcept : data(a.data()), size(N) {}
  // Span<float> converts to Span<const float>.
  template <class U>
  constexpr Span(Span<U> s) noexcept : data(s.data), size(s.size) {}
};

}  // namespace emha

// SPDX-License-Identifier: Apache-2.0
#pragma once
// Storage members of MultiHeadAttention: its arena (owned or the caller's), and floats held
// inside the object or nothing.

#include <cstddef>
#include "emha/arena.hpp"
#include "emha/attention/config.hpp"

namespace emha::detail {
template <ArenaOwnership Own, std::size_t Bytes>
struct ArenaHolder {
  StaticArena<Bytes> arena;
  ArenaRef& get() noexcept { return arena; }
  const ArenaRef& get() const noexcept { return arena; }
};
template <std::size_t Bytes>
struct ArenaHolder<ArenaOwnership::caller, Bytes> {
  ArenaRef arena;
  ArenaRef& get() noexcept { return arena; }
  const ArenaRef& get() const noexcept { return arena; }
};
// Floats inside the object (the pre-packed weights, the position tables), or nothing.
template <bool Enabled, std::size_t Floats>
struct ObjectFloats {
  alignas(64) float data[Floats];
};
template <std::size_t Floats>
struct ObjectFloats<false, Floats> {
  static constexpr float* data = nullptr;
};
}  // namespace emha::detail

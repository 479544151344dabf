// SPDX-License-Identifier: Apache-2.0
#pragma once
// Storage of MultiHeadAttention: its arena (owned or the caller's) with the constructors that
// take it, and floats held inside the object or nothing.

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
// A layer's arena and its constructors (MultiHeadAttention's, of every arithmetic): owned, it
// is a member of Bytes bytes; else the caller's, given as an ArenaRef (forward() returns no_space
// unless it has Bytes available) or as a StaticArena (its size checked at compile time; the layer
// works through its own copy of the view: read high_water() from arena(), not from `storage`).
template <ArenaOwnership Own, std::size_t Bytes>
class LayerArena {
 public:
  LayerArena() noexcept {
    static_assert(Own == ArenaOwnership::owned, "pass an ArenaRef: this MultiHeadAttention uses the caller's arena");
  }
  explicit LayerArena(ArenaRef scratch) noexcept : scratch_{scratch} {
    static_assert(Own == ArenaOwnership::caller, "this MultiHeadAttention owns its arena: use the default constructor");
  }
  template <std::size_t N, std::size_t A>
  explicit LayerArena(StaticArena<N, A>& storage) noexcept : scratch_{storage.ref()} {
    static_assert(Own == ArenaOwnership::caller, "this MultiHeadAttention owns its arena: use the default constructor");
    static_assert(N >= Bytes, "StaticArena smaller than MultiHeadAttention::arena_bytes");
  }
  LayerArena(const LayerArena&) = delete;
  LayerArena& operator=(const LayerArena&) = delete;

  // The scratch arena, e.g. to read high_water() after forward().
  const ArenaRef& arena() const noexcept { return scratch_.get(); }

 protected:
  ArenaHolder<Own, Bytes> scratch_{};
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

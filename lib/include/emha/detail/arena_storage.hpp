// SPDX-License-Identifier: Apache-2.0
#pragma once
// The bytes of a StaticArena (emha/arena.hpp).

#include <cstddef>

namespace emha::detail {
template <std::size_t Bytes, std::size_t Align>
struct ArenaStorage {
  static_assert(Bytes > 0, "an arena needs at least one byte");
  static_assert(Align > 0 && (Align & (Align - 1)) == 0, "arena alignment must be a power of two");
  alignas(Align) std::byte storage[Bytes];
};
}  // namespace emha::detail

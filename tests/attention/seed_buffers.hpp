// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the seed suites (test_seed_models.cpp: whole forwards; test_kv_cache.cpp: decoding
// through a KvCache) share: the layer's object slot and its caller arena, sized at compile time
// for the largest fixture of seed_fixture_list (emha::seed_fixtures::small on the firmware, all on
// the host). The suites run one after the other and each destroys its layer before the next is
// placed, so one slot serves both (a second one would cost the firmware ~75 KB of RAM: 60 KB of
// pre-packed weights and a 15 KB arena).

#include <cstddef>
#include <type_traits>

#include "attention/seed_support.hpp"
#include "attention/parity_buffers.hpp"
#include "seed_fixtures/all.hpp"
#include "support/unit.hpp"

namespace emha::test {

// The seed fixtures a target runs: those below 20000 array elements on the firmware, all on the host.
using seed_fixture_list = std::conditional_t<on_firmware, seed_fixtures::small, seed_fixtures::all>;

template <class F, bool Prepack>
using SeedMha = MultiHeadAttention<SeedConfig<F, Prepack>, ArenaOwnership::caller>;

template <class F>
using SeedArenaBytes = ArenaBytesOf<SeedMha, F>;
template <class F>
using SeedObjectBytes = ObjectBytesOf<SeedMha, F>;

inline StaticArena<largest_of<SeedArenaBytes, seed_fixture_list>> g_seed_arena;
alignas(64) inline unsigned char g_seed_object[largest_of<SeedObjectBytes, seed_fixture_list>];

}  // namespace emha::test

// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the seed suites (test_seed_models.cpp: whole forwards; test_kv_cache.cpp: decoding
// through a KvCache) share: the layer's object slot and its caller arena, sized at compile time
// for the largest fixture of seed_fixture_list (emha::seed_fixtures::small on the firmware, all on
// the host). The suites run one after the other and each destroys its layer before the next is
// placed, so one slot serves both (a second one would cost the firmware ~75 KB of RAM: 60 KB of
// pre-packed weights and a 15 KB arena). test_layer_features.cpp's layers use them too.

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

// test_seed_models.cpp's outputs and attention weights, each with `guard` sentinels on both sides
// (parity_buffers.hpp). test_layer_features.cpp runs its smaller layers in these same slots
// (the outputs, and a KvCache's storage in g_seed_attn), checked at compile time.
alignas(64) inline float g_seed_out[largest_of<OutFloats, seed_fixture_list> + 2 * guard];
alignas(64) inline float g_seed_attn[largest_of<WeightFloats, seed_fixture_list> + 2 * guard];

}  // namespace emha::test

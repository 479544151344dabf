// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the seed suites (test_seed_parity.cpp: whole forwards; test_kv_cache.cpp: decoding
// through a KvCache) share: the layer's object slot and its caller arena, sized at compile time
// for the largest fixture of emha::seed_fixtures::small. The suites run one after the other and
// each destroys its layer before the next is placed, so one slot serves both (a second one would
// cost the firmware ~75 KB of RAM: 60 KB of pre-packed weights and a 15 KB arena).

#include <cstddef>

#include "attention/seed_support.hpp"
#include "parity_buffers.hpp"
#include "seed_fixtures/all.hpp"

namespace fw {

template <class F, bool Prepack>
using SeedMha = emha::MultiHeadAttention<emha::test::SeedConfig<F, Prepack>, emha::ArenaOwnership::caller>;

template <class F>
using SeedArenaBytes = ArenaBytesOf<SeedMha, F>;
template <class F>
using SeedObjectBytes = ObjectBytesOf<SeedMha, F>;

inline emha::StaticArena<largest_of<SeedArenaBytes, emha::seed_fixtures::small>> g_seed_arena;
alignas(64) inline unsigned char g_seed_object[largest_of<SeedObjectBytes, emha::seed_fixtures::small>];

}  // namespace fw

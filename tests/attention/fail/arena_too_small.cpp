// SPDX-License-Identifier: Apache-2.0
// Must not compile: a caller arena with a compile-time size below arena_bytes.
#include <emha/emha.hpp>

using Mha = emha::MultiHeadAttention<emha::MhaConfig<64, 4, 8>, emha::ArenaOwnership::caller>;
emha::StaticArena<1024> arena;
Mha mha(arena);

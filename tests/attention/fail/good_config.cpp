// SPDX-License-Identifier: Apache-2.0
// Control for the must-not-compile tests: the same harness on valid configs compiles.
#include <emha/emha.hpp>

struct Good : emha::MhaConfig<64, 4, 8> {
  static constexpr std::size_t kdim = 32;
};
emha::MultiHeadAttention<Good> mha;
emha::StaticArena<emha::MultiHeadAttention<Good>::arena_bytes> arena;
emha::MultiHeadAttention<Good, emha::ArenaOwnership::caller> mha_caller(arena);

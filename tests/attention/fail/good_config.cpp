// SPDX-License-Identifier: Apache-2.0
// Control for the must-not-compile tests: the same harness on valid configs compiles.
#include <emha/emha.hpp>

struct Good : emha::MhaConfig<64, 4, 8> {
  static constexpr std::size_t kdim = 32;
};
emha::MultiHeadAttention<Good> mha;
emha::StaticArena<emha::MultiHeadAttention<Good>::arena_bytes> arena;
emha::MultiHeadAttention<Good, emha::ArenaOwnership::caller> mha_caller(arena);

// The model-family features together: head_dim set where d_model is not divisible by heads,
// QK-norm with Gemma's unit offset, a compile-time scale, T5's causal relative bias.
struct Features : emha::MhaConfig<30, 4, 8> {
  static constexpr std::size_t head_dim = 16;
  static constexpr std::size_t kv_heads = 2;
  static constexpr float scale = 1.0f;
  static constexpr emha::QkNorm qk_norm = emha::QkNorm::per_head;
  static constexpr bool qk_norm_unit_offset = true;
  static constexpr emha::Position position = emha::Position::relative_bias;
  static constexpr std::size_t relative_buckets = 8;
  static constexpr std::size_t relative_max_distance = 12;
  static constexpr bool relative_bidirectional = false;
};
emha::MultiHeadAttention<Features> features;
emha::KvCache<Features> features_cache;

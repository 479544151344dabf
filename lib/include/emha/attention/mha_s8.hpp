// SPDX-License-Identifier: Apache-2.0
#pragma once
// MultiHeadAttention for a Config with `arithmetic = Arithmetic::s8`: attention in TFLite's
// full-integer int8, as a TFLite Micro or CMSIS-NN graph computes it, bit for bit:
//   Q, K, V = FULLY_CONNECTED(query, key, value)     int8, weights per output channel
//   S_h     = BATCH_MATMUL(Q_h, K_g^T)               int8 (the scores' scale folded into its multiplier)
//   P_h     = SOFTMAX(S_h) over the unmasked keys    int8, scale 1/256, zero point -128
//   C_h     = BATCH_MATMUL(P_h, V_g)                 int8, the heads side by side in C
//   out     = FULLY_CONNECTED(C)                     int8
// with head h reading K/V head g = h / (heads / kv_heads). Each stage is requantized by the
// multipliers of MhaS8Weights (TFLite's QuantizeMultiplier of the real ratio of scales) with the
// Config's rounding; the arithmetic of each is emha/kernels/matmul_s8_ref.hpp and
// softmax_s8_ref.hpp. A masked key is left out of its row's softmax (TFLite's softmax of the
// row's unmasked scores) and gets probability 0 (-128); a row with every key masked attends to
// nothing: its context is the context's zero point.
// Fused: each query row's scores and probabilities live in O(S_kv) bytes, never [S_q x S_kv].
// No heap, no float anywhere in the pass.

#include <cstddef>
#include <cstdint>

#include "emha/arena.hpp"
#include "emha/attention/config.hpp"
#include "emha/attention/options_s8.hpp"
#include "emha/detail/layer_storage.hpp"
#include "emha/detail/mha_s8_plan.hpp"
#include "emha/status.hpp"

namespace emha {

template <class Config, ArenaOwnership Own, Arithmetic>
class MultiHeadAttention;

template <class Config, ArenaOwnership Own>
class MultiHeadAttention<Config, Own, Arithmetic::s8> : public detail::LayerArena<Own, detail::mha_s8_arena_bytes(detail::checked_dims_s8<Config>())> {
  using Storage = detail::LayerArena<Own, detail::mha_s8_arena_bytes(detail::checked_dims_s8<Config>())>;

  static_assert(detail::check_config<Config>() && detail::check_config_s8<Config>(), "invalid MhaConfig");

 public:
  using config = Config;
  static constexpr detail::MhaDims dims = detail::mha_dims<Config>();
  // Scratch bytes forward() needs: the arena's size (owned) or the minimum a caller passes.
  static constexpr std::size_t arena_bytes = detail::mha_s8_arena_bytes(dims);

  // Owned arena: MultiHeadAttention(); the caller's: MultiHeadAttention(ArenaRef) or
  // MultiHeadAttention(StaticArena&) (detail::LayerArena). Not copyable.
  using Storage::Storage;

  // Takes the quantized weights and parameters (kept by pointer: they must outlive this object).
  // null_pointer or size_mismatch when a span is missing or not exactly its size,
  // invalid_argument when a zero point is outside [-128, 127], a multiplier outside
  // QuantizedMultiplier's range, a weight -128 or softmax parameters out of range. On an error
  // the weights set before (if any) stay in use.
  Status set_weights(const MhaS8Weights& w) noexcept {
    const Status s = detail::mha_s8_check_weights(dims, w);
    if (s == Status::ok) {
      weights_ = w;
      softmax_s8_table<Config::rounding>(w.softmax, softmax_table_);
      has_weights_ = true;
    }
    return s;
  }

  // out = the int8 graph above on query [B, S_q, d_model], key [B, S_kv, kdim], value
  // [B, S_kv, vdim] (or [S, B, dim]: shape.layout), out like query; int8 each with its stage's
  // zero point. Self-attention may pass one span three times. Masks as the float layer's
  // (AttentionMasks) except the float ones: attn_additive and score_bias are invalid_argument.
  // options.attn_weights, when given: each head's probabilities [B, heads, S_q, S_kv] as int8
  // (p = (q + 128) / 256). Errors (nothing written to out or attn_weights): invalid_argument (no
  // weights, a zero size, a layout or mask shape outside its enumerators, a float mask, an attend
  // mask whose rows are not S_q or 1 or whose batch is not B or 1), too_long (S_q, S_kv or B
  // above the Config's maxima), null_pointer, size_mismatch (a span too small), overlap (out or
  // attn_weights sharing a byte with an input, the weights, each other or a caller's arena),
  // no_space (a caller arena smaller than arena_bytes).
  Status forward(const AttentionShape& shape, Span<const std::int8_t> query, Span<const std::int8_t> key,
                 Span<const std::int8_t> value, Span<std::int8_t> out, const ForwardOptionsS8& options = {}) noexcept {
    if (!has_weights_) return Status::invalid_argument;
    return detail::mha_s8_forward<Config::rounding, false>(dims, weights_, softmax_table_, this->scratch_.get(), shape, query, key, value,
                                                           out, options);
  }
  // forward() on the scalar reference kernels (gemm_s8_ref, softmax_s8_ref): the same bytes, slower.
  Status forward_reference(const AttentionShape& shape, Span<const std::int8_t> query, Span<const std::int8_t> key,
                           Span<const std::int8_t> value, Span<std::int8_t> out,
                           const ForwardOptionsS8& options = {}) noexcept {
    if (!has_weights_) return Status::invalid_argument;
    return detail::mha_s8_forward<Config::rounding, true>(dims, weights_, softmax_table_, this->scratch_.get(), shape, query, key, value,
                                                          out, options);
  }


 private:
  MhaS8Weights weights_{};
  SoftmaxS8Table softmax_table_{};  // the softmax's exps (softmax_s8.hpp), made by set_weights()
  bool has_weights_ = false;
};

}  // namespace emha

// SPDX-License-Identifier: Apache-2.0
#pragma once
// MultiHeadAttention for a Config with `arithmetic = Arithmetic::s16x8`: attention in TFLite's
// 16x8 quantization (int16 activations, int8 weights), bit for bit as TFLite's reference kernels
// compute it (CMSIS-NN's s16 kernels give the same values wherever no requantized sum reaches
// 2^30, where its int32 shift wraps; those outputs saturate in TFLite):
//   Q, K, V = FULLY_CONNECTED(query, key, value)     int16, int8 weights per output channel, int64 bias
//   S_h     = BATCH_MATMUL(Q_h, K_g^T)               int16 (the scores' scale folded into its multiplier)
//   P_h     = SOFTMAX(S_h) over the unmasked keys    int16, scale 1/32768
//   C_h     = BATCH_MATMUL(P_h, V_g)                 int16, the heads side by side in C
//   out     = FULLY_CONNECTED(C)                     int16
// with head h reading K/V head g = h / (heads / kv_heads). Every int16 tensor is symmetric (zero
// point 0); products sum in int64 and are requantized by TFLite's int64 MultiplyByQuantizedMultiplier
// (requantize_s64); the softmax is TFLite's int16 one (emha/kernels/softmax_s16.hpp, its
// differences requantized with the Config's rounding). A masked key is left out of its row's
// softmax and gets probability 0; a row with every key masked attends to nothing (context 0).
// Where it pays: s8's probabilities have a step of 1/256, so over rows of a few hundred keys a
// typical probability is one step or none; 16x8 keeps 15 bits (bench/README.md measures both).
// Fused: each query row's scores and probabilities live in O(S_kv), never [S_q x S_kv].
// No heap, no float anywhere in the pass.

#include <cstddef>
#include <cstdint>

#include "emha/arena.hpp"
#include "emha/attention/config.hpp"
#include "emha/attention/options_s16x8.hpp"
#include "emha/detail/layer_storage.hpp"
#include "emha/detail/mha_s16x8_plan.hpp"
#include "emha/status.hpp"

namespace emha {

template <class Config, ArenaOwnership Own, Arithmetic>
class MultiHeadAttention;

template <class Config, ArenaOwnership Own>
class MultiHeadAttention<Config, Own, Arithmetic::s16x8>
    : public detail::LayerArena<Own, detail::mha_s16x8_arena_bytes(detail::checked_dims_s8<Config>())> {
  using Storage = detail::LayerArena<Own, detail::mha_s16x8_arena_bytes(detail::checked_dims_s8<Config>())>;

  static_assert(detail::check_config<Config>() && detail::check_config_s8<Config>(), "invalid MhaConfig");

 public:
  using config = Config;
  static constexpr detail::MhaDims dims = detail::mha_dims<Config>();
  // Scratch bytes forward() needs: the arena's size (owned) or the minimum a caller passes.
  static constexpr std::size_t arena_bytes = detail::mha_s16x8_arena_bytes(dims);

  // Owned arena: MultiHeadAttention(); the caller's: MultiHeadAttention(ArenaRef) or
  // MultiHeadAttention(StaticArena&) (detail::LayerArena). Not copyable.
  using Storage::Storage;

  // Takes the quantized weights and parameters (kept by pointer: they must outlive this object).
  // null_pointer or size_mismatch when a span is missing or not exactly its size (a bias may be
  // absent), invalid_argument when a weight is -128, a bias reaches 2^46 in magnitude or a
  // multiplier is outside its range (shift [-31, 7] for the products', [-31, 30] for the
  // softmax's). On an error the weights set before (if any) stay in use.
  Status set_weights(const MhaS16x8Weights& w) noexcept {
    const Status s = detail::mha_s16x8_check_weights(dims, w);
    if (s == Status::ok) {
      weights_ = w;
      has_weights_ = true;
    }
    return s;
  }

  // out = the 16x8 graph above on query [B, S_q, d_model], key [B, S_kv, kdim], value
  // [B, S_kv, vdim] (or [S, B, dim]: shape.layout), out like query. Self-attention may pass one
  // span three times. Masks and errors as the s8 layer's (mha_s8.hpp); options.attn_weights, when
  // given: each head's probabilities [B, heads, S_q, S_kv] as int16 (p = q / 32768).
  Status forward(const AttentionShape& shape, Span<const std::int16_t> query, Span<const std::int16_t> key,
                 Span<const std::int16_t> value, Span<std::int16_t> out,
                 const ForwardOptionsS16x8& options = {}) noexcept {
    if (!has_weights_) return Status::invalid_argument;
    return detail::mha_s16x8_forward<Config::rounding, false>(dims, weights_, this->scratch_.get(), shape, query, key,
                                                              value, out, options);
  }
  // forward() on the scalar reference kernels (gemm_s16x8_ref, gemm_s16_ref, requantize_s16_ref):
  // the same values, slower.
  Status forward_reference(const AttentionShape& shape, Span<const std::int16_t> query,
                           Span<const std::int16_t> key, Span<const std::int16_t> value, Span<std::int16_t> out,
                           const ForwardOptionsS16x8& options = {}) noexcept {
    if (!has_weights_) return Status::invalid_argument;
    return detail::mha_s16x8_forward<Config::rounding, true>(dims, weights_, this->scratch_.get(), shape, query, key,
                                                             value, out, options);
  }

 private:
  MhaS16x8Weights weights_{};
  bool has_weights_ = false;
};

}  // namespace emha

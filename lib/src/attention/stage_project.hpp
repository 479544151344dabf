// SPDX-License-Identifier: Apache-2.0
#pragma once
// Stage: [Q | K | V] of one sequence = inputs * W_in^T + b_in, into Pass::qkv [S, qkv_dim]
// (Q q_dim wide, K and V kv_dim each).

#include "attention/pass.hpp"
#include "attention/return_on_error.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

// The input projection weights as three row blocks of W_in (float, or int8: their row scales
// from in_proj_scale), and their biases (null: none).
struct InProj {
  const void* w[3];
  std::size_t ld[3];
  const float* bias[3];
};

inline InProj in_proj(const MhaDims& d, const MhaWeights& w) noexcept {
  InProj p{};
  const bool q8 = d.int8_weights;
  if (d.same_embed_dim()) {  // in_proj_weight: rows [W_q | W_k | W_v]
    for (int i = 0; i < 3; ++i) {
      const std::size_t row = d.proj_col(i);
      p.w[i] = q8 ? static_cast<const void*>(w.in_proj_weight_int8.data + row * d.d_model)
                  : static_cast<const void*>(w.in_proj_weight.data + row * d.d_model);
      p.ld[i] = d.d_model;
    }
  } else {
    p.w[0] = q8 ? static_cast<const void*>(w.q_proj_weight_int8.data) : w.q_proj_weight.data;
    p.w[1] = q8 ? static_cast<const void*>(w.k_proj_weight_int8.data) : w.k_proj_weight.data;
    p.w[2] = q8 ? static_cast<const void*>(w.v_proj_weight_int8.data) : w.v_proj_weight.data;
    p.ld[0] = d.d_model;
    p.ld[1] = d.kdim;
    p.ld[2] = d.vdim;
  }
  const float* bias = w.in_proj_bias.data;  // only the projections that have one, in order
  for (int i = 0; i < 3; ++i) {
    p.bias[i] = d.bias[i] ? bias : nullptr;
    if (d.bias[i]) bias += d.proj_dim(i);
  }
  return p;
}

// Int8 weights: the row scales of block i (0, 1, 2: Q, K, V) of W_in. Computed where a product
// runs rather than kept in InProj: the float stages' frames stay their size (Cortex-M stack).
inline const float* in_proj_scale(const MhaDims& d, const MhaWeights& w, int i) noexcept {
  if (d.same_embed_dim()) return w.in_proj_weight_scale.data + d.proj_col(i);
  return i == 0 ? w.q_proj_weight_scale.data : i == 1 ? w.k_proj_weight_scale.data : w.v_proj_weight_scale.data;
}

// c[r][0 ..) = x_r * W_i^T + b_i for i in [first, first + count), side by side (count == 1 when
// the weights are pre-packed: `packed` holds their panels, else all null), in column blocks over
// the task slots; c is Pass::qkv's columns of block `first` (or a cache's K | V row). Inlined:
// its own frame only held the Product (Cortex-M4 -Os stack).
template <class K, bool Int8>
[[gnu::always_inline]] inline Status project(const MhaDims& d, const MhaWeights& w, const InProj& p,
                                             const MhaPacked& packed, int first, int count,
                                             Rows<const float> x, std::size_t rows, float* c,
                                             std::size_t ldc, const TaskSlots& slots) noexcept {
  const std::size_t cols = d.proj_col(first + count) - d.proj_col(first);
  if constexpr (Int8) {
    const ProductW8 product{{rows, cols, p.ld[first], x.p, x.ld, p.w[first], packed.w[first],
                             packed.bytes[first], p.bias[first], c, ldc},
                            in_proj_scale(d, w, first)};
    return run_product<K, true>(product, slots);
  } else {
    const Product product{rows,     cols,     p.ld[first], x.p, x.ld, p.w[first], packed.w[first], packed.bytes[first],
                          p.bias[first], c, ldc};
    return run_product<K, false>(product, slots);
  }
}

// Whether K and V are one product: one input, the same width, no panels, the same bias kind.
inline bool fused_kv(const MhaDims& d, const MhaPacked& pk, const float* in_k, const float* in_v) noexcept {
  return d.same_embed_dim() && in_k == in_v && !pk.w[1] && d.bias[1] == d.bias[2];
}

// Blocks that share one input are one GEMM (self-attention: all three; key == value: K and V)
// unless the weights are pre-packed or only some of the blocks have a bias. Over a cache's static
// K/V (new_kv == 0) only Q. Int8: int8 weights (d.int8_weights).
template <class K, bool Int8>
[[gnu::noinline]] Status project_stage(const Pass& s, std::size_t b) noexcept {
  const MhaDims& d = s.d;
  const std::size_t sq = s.sh.seq_q, skv = s.new_kv, ld = d.qkv_dim();
  const InProj p = in_proj(d, s.w);
  const MhaPacked& pk = s.packed;
  const bool fuse_kv = fused_kv(d, pk, s.in_k, s.in_v);
  const bool fuse_qkv = fuse_kv && d.bias[0] == d.bias[1] && s.in_q == s.in_k && sq == skv;
  const Rows<const float> xq = rows_of(s.in_q, b, sq, d.d_model, s.sh);
  if (fuse_qkv) return project<K, Int8>(d, s.w, p, pk, 0, 3, xq, sq, s.qkv, ld, s.slots);
  EMHA_TRY((project<K, Int8>(d, s.w, p, pk, 0, 1, xq, sq, s.qkv, ld, s.slots)));
  if (skv == 0) return Status::ok;
  float* const k = s.qkv + d.proj_col(1);
  const Rows<const float> xk = rows_of(s.in_k, b, skv, d.kdim, s.sh);
  if (fuse_kv) return project<K, Int8>(d, s.w, p, pk, 1, 2, xk, skv, k, ld, s.slots);
  EMHA_TRY((project<K, Int8>(d, s.w, p, pk, 1, 1, xk, skv, k, ld, s.slots)));
  return project<K, Int8>(d, s.w, p, pk, 2, 1, rows_of(s.in_v, b, skv, d.vdim, s.sh), skv, k + d.kv_dim(), ld, s.slots);
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

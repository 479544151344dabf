// SPDX-License-Identifier: Apache-2.0
#pragma once
// Stage: the output projection of one sequence, out rows = ctx * W_out^T + b_out (ctx [S_q x
// q_dim], W_out [d_model x q_dim]), or with the
// residual of pre- and post-LN, out rows = query rows + (ctx * W_out^T + b_out) (the query is
// copied into out, which the GEMM then accumulates onto: beta = 1).

#include "attention/pass.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

// Int8: int8 weights (d.int8_weights), out_proj_weight_int8 with its row scales.
template <class K, bool Int8>
Status project_output(const Pass& s, std::size_t b, float beta) noexcept {
  const std::size_t D = s.d.d_model, Q = s.d.q_dim();
  const Rows<float> y = rows_of(s.out, b, s.sh.seq_q, D, s.sh);
  const void* w = Int8 ? static_cast<const void*>(s.w.out_proj_weight_int8.data) : s.w.out_proj_weight.data;
  ProductOf<Int8> product{};
  static_cast<Product&>(product) = Product{s.sh.seq_q, D, Q, s.ctx, Q, w, s.packed.w[3], s.packed.bytes[3],
                                           s.d.bias[3] ? s.w.out_proj_bias.data : nullptr, y.p, y.ld};
  if constexpr (Int8) product.scale = s.w.out_proj_weight_scale.data;
  product.beta = beta;
  // k in blocks: the projection whose error reaches the output unattenuated (gemm.hpp's note).
  product.k_blocks = true;
  return run_product<K, Int8>(product, s.slots);
}

template <class K, bool Int8>
[[gnu::noinline]] Status output_stage(const Pass& s, std::size_t b) noexcept {
  return project_output<K, Int8>(s, b, 0.0f);
}

template <class K, bool Int8>
[[gnu::noinline]] Status residual_output_stage(const Pass& s, std::size_t b) noexcept {
  const std::size_t D = s.d.d_model;
  const Rows<const float> x = rows_of(s.query, b, s.sh.seq_q, D, s.sh);
  const Rows<float> y = rows_of(s.out, b, s.sh.seq_q, D, s.sh);
  for (std::size_t i = 0; i < s.sh.seq_q; ++i)
    for (std::size_t j = 0; j < D; ++j) y.p[i * y.ld + j] = x.p[i * x.ld + j];
  return project_output<K, Int8>(s, b, 1.0f);
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

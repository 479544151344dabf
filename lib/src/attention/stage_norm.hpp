// SPDX-License-Identifier: Apache-2.0
#pragma once
// Stages of the layer's one normalization (Config::norm, norm_kind), over rows of norm_dim floats
// (d_model; q_dim for sub-LN):
//   norm_input_stage   pre-LN:  out rows = Norm(query rows); the projections read them from there
//                      (out is not written again until the output projection, which no longer
//                      needs them)
//   norm_heads_stage   sub-LN:  ctx = Norm(ctx), the concatenated heads before out_proj
//   norm_output_stage  post-LN: out = Norm(out), after the residual (stage_output.hpp)

#include "attention/kernel_set.hpp"
#include "attention/pass.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

// y = Norm(x) over `rows` rows (in place when x == y).
template <class K>
void normalize(const Pass& s, std::size_t rows, const float* x, std::size_t ldx, float* y,
               std::size_t ldy) noexcept {
  const MhaDims& d = s.d;
  const float* gamma = d.norm_affine ? s.w.norm_weight.data : nullptr;
  if (d.norm_kind == NormKind::rms_norm) {
    K::rms_norm_f32(rows, d.norm_dim(), x, ldx, y, ldy, gamma, d.norm_eps);
  } else {
    const float* beta = d.norm_affine ? s.w.norm_bias.data : nullptr;
    K::layer_norm_f32(rows, d.norm_dim(), x, ldx, y, ldy, gamma, beta, d.norm_eps);
  }
}

template <class K>
[[gnu::noinline]] Status norm_input_stage(const Pass& s, std::size_t b) noexcept {
  const std::size_t D = s.d.d_model;
  const Rows<const float> x = rows_of(s.query, b, s.sh.seq_q, D, s.sh);
  const Rows<float> y = rows_of(s.out, b, s.sh.seq_q, D, s.sh);
  normalize<K>(s, s.sh.seq_q, x.p, x.ld, y.p, y.ld);
  return Status::ok;
}

template <class K>
[[gnu::noinline]] Status norm_heads_stage(const Pass& s, std::size_t) noexcept {
  normalize<K>(s, s.sh.seq_q, s.ctx, s.d.q_dim(), s.ctx, s.d.q_dim());
  return Status::ok;
}

template <class K>
[[gnu::noinline]] Status norm_output_stage(const Pass& s, std::size_t b) noexcept {
  const Rows<float> y = rows_of(s.out, b, s.sh.seq_q, s.d.d_model, s.sh);
  normalize<K>(s, s.sh.seq_q, y.p, y.ld, y.p, y.ld);
  return Status::ok;
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

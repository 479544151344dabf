// SPDX-License-Identifier: Apache-2.0
#pragma once
// Stage: QK-norm (Config::qk_norm), RMSNorm of one sequence's projected Q rows and new K rows in
// place in Pass::qkv, after the projections' bias and before positions (HF Qwen3, Gemma 3,
// OLMo-2): per head over each head's d_k floats with weights [d_k], or over the whole Q row
// [q_dim] and K row [kv_dim]. With a cache, K is stored normalized.

#include "attention/kernel_set.hpp"
#include "attention/pass.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

template <class K>
[[gnu::noinline]] Status qk_norm_stage(const Pass& s, std::size_t) noexcept {
  const MhaDims& d = s.d;
  const std::size_t ld = d.qkv_dim(), dk = d.d_k(), sq = s.sh.seq_q, nk = s.new_kv;
  const float* gq = s.w.q_norm_weight.data;
  const float* gk = s.w.k_norm_weight.data;
  float* const q = s.qkv;
  float* const k = s.qkv + d.proj_col(1);
  if (d.qk_norm == QkNorm::whole) {
    K::rms_norm_f32(sq, d.q_dim(), q, ld, q, ld, gq, d.qk_norm_eps);
    K::rms_norm_f32(nk, d.kv_dim(), k, ld, k, ld, gk, d.qk_norm_eps);
    return Status::ok;
  }
  for (std::size_t h = 0; h < d.heads; ++h) K::rms_norm_f32(sq, dk, q + h * dk, ld, q + h * dk, ld, gq, d.qk_norm_eps);
  for (std::size_t g = 0; g < d.kv_heads; ++g)
    K::rms_norm_f32(nk, dk, k + g * dk, ld, k + g * dk, ld, gk, d.qk_norm_eps);
  return Status::ok;
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

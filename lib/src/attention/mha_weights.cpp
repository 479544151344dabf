// SPDX-License-Identifier: Apache-2.0
// The object's derived copies of weights (compiled once: no instruction-set variants): Gemma's
// QK-norm weight 1 + w.

#include "emha/detail/mha_plan.hpp"

namespace emha::detail {

MhaWeights mha_unit_offset(const MhaDims& d, const MhaWeights& w, float* storage) noexcept {
  MhaWeights out = w;
  const Span<const float> src[2] = {w.q_norm_weight, w.k_norm_weight};
  Span<const float>* dst[2] = {&out.q_norm_weight, &out.k_norm_weight};
  const std::size_t n[2] = {d.q_norm_dim(), d.k_norm_dim()};
  for (int t = 0; t < 2; ++t) {
    for (std::size_t i = 0; i < n[t]; ++i) storage[i] = 1.0f + src[t].data[i];
    *dst[t] = Span<const float>{storage, n[t]};
    storage += n[t];
  }
  return out;
}

}  // namespace emha::detail

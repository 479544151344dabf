// SPDX-License-Identifier: Apache-2.0
#pragma once
// Scalar reference of softmax_f32 (same contract), the oracle of its tests. Acc = double gives
// the float64 check.

#include <cmath>
#include <cstddef>
#include <limits>

#include "emha/kernels/softmax.hpp"

namespace emha {

// Always inlined, for gemm_f32_ref's reason (gemm_ref.hpp).
template <class Acc = float>
[[gnu::always_inline]] inline void softmax_f32_ref(std::size_t rows, std::size_t n, const float* x,
                                                   std::size_t ldx, float* y, std::size_t ldy,
                                                   const SoftmaxOptions& o = {}) noexcept {
  const Acc neg_inf = -std::numeric_limits<Acc>::infinity();
  for (std::size_t i = 0; i < rows; ++i) {
    const float* xr = x + i * ldx;
    const float* mr = o.mask ? o.mask + i * o.ldmask : nullptr;
    float* yr = y + i * ldy;
    auto z = [&](std::size_t j) {
      return Acc(o.scale) * Acc(xr[j]) + (mr ? Acc(mr[j]) : Acc(0));
    };
    Acc max = neg_inf;
    bool nan = false;
    for (std::size_t j = 0; j < n; ++j) {
      const Acc v = z(j);
      nan = nan || std::isnan(v);
      if (v > max) max = v;
    }
    if (nan || max == neg_inf) {
      const float fill = nan ? std::numeric_limits<float>::quiet_NaN() : 0.0f;
      for (std::size_t j = 0; j < n; ++j) yr[j] = fill;
      continue;
    }
    Acc sum = 0;
    for (std::size_t j = 0; j < n; ++j) sum += std::exp(z(j) - max);
    for (std::size_t j = 0; j < n; ++j) yr[j] = static_cast<float>(std::exp(z(j) - max) / sum);
  }
}

// Scalar reference of softmax_online_update_f32 (same contract).
inline void softmax_online_update_f32_ref(std::size_t rows, std::size_t n, float* s,
                                          std::size_t lds, float* row_max, float* row_sum,
                                          float* o, std::size_t ldo, std::size_t o_cols) noexcept {
  const float neg_inf = -std::numeric_limits<float>::infinity();
  for (std::size_t i = 0; i < rows; ++i) {
    float* si = s + i * lds;
    float m_new = row_max[i];
    bool nan = false;
    for (std::size_t j = 0; j < n; ++j) {
      nan = nan || std::isnan(si[j]);
      if (si[j] > m_new) m_new = si[j];
    }
    if (m_new == neg_inf) {
      if (nan) row_sum[i] = std::numeric_limits<float>::quiet_NaN();
      for (std::size_t j = 0; j < n; ++j) si[j] = 0.0f;
      continue;
    }
    float sum = 0.0f;
    for (std::size_t j = 0; j < n; ++j) {
      si[j] = std::exp(si[j] - m_new);
      sum += si[j];
    }
    if (row_max[i] != neg_inf) {  // o and l hold blocks summed against the old max
      const float c = std::exp(row_max[i] - m_new);
      row_sum[i] *= c;
      for (std::size_t q = 0; q < o_cols; ++q) o[i * ldo + q] *= c;
    }
    row_sum[i] += sum;
    row_max[i] = m_new;
  }
}

// Scalar reference of softmax_online_finish_f32.
inline void softmax_online_finish_f32_ref(std::size_t rows, std::size_t o_cols,
                                          const float* row_sum, float* o, std::size_t ldo) noexcept {
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t q = 0; q < o_cols; ++q)
      o[i * ldo + q] = row_sum[i] == 0.0f ? 0.0f : o[i * ldo + q] / row_sum[i];
}

}  // namespace emha

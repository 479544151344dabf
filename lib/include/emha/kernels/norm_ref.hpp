// SPDX-License-Identifier: Apache-2.0
#pragma once
// Scalar references of layer_norm_f32 and rms_norm_f32 (same contracts, emha/kernels/norm.hpp),
// the oracles of their tests: sequential sums in Acc. Acc = double gives the float64 check.

#include <cmath>
#include <cstddef>

#include "emha/kernels/norm.hpp"

namespace emha {

// Always inlined, for gemm_f32_ref's reason (gemm_ref.hpp).
template <class Acc = float>
[[gnu::always_inline]] inline void layer_norm_f32_ref(std::size_t rows, std::size_t n, const float* x,
                                                      std::size_t ldx, float* y, std::size_t ldy,
                                                      const float* gamma, const float* beta, float eps) noexcept {
  if (n == 0) return;
  for (std::size_t i = 0; i < rows; ++i) {
    const float* xr = x + i * ldx;
    float* yr = y + i * ldy;
    Acc sum = 0;
    for (std::size_t j = 0; j < n; ++j) sum += Acc(xr[j]);
    const Acc mean = sum / Acc(n);
    Acc sq = 0;
    for (std::size_t j = 0; j < n; ++j) sq += (Acc(xr[j]) - mean) * (Acc(xr[j]) - mean);
    const Acc rstd = Acc(1) / std::sqrt(sq / Acc(n) + Acc(eps));
    for (std::size_t j = 0; j < n; ++j) {  // (x - mean) * (rstd * gamma) + beta, one fused step
      const Acc d = Acc(xr[j]) - mean, s = gamma ? rstd * Acc(gamma[j]) : rstd;
      yr[j] = static_cast<float>(beta ? std::fma(d, s, Acc(beta[j])) : d * s);
    }
  }
}

// Always inlined, for gemm_f32_ref's reason (gemm_ref.hpp).
template <class Acc = float>
[[gnu::always_inline]] inline void rms_norm_f32_ref(std::size_t rows, std::size_t n, const float* x,
                                                    std::size_t ldx, float* y, std::size_t ldy,
                                                    const float* gamma, float eps) noexcept {
  if (n == 0) return;
  for (std::size_t i = 0; i < rows; ++i) {
    const float* xr = x + i * ldx;
    float* yr = y + i * ldy;
    Acc sq = 0;
    for (std::size_t j = 0; j < n; ++j) sq += Acc(xr[j]) * Acc(xr[j]);
    const Acc rstd = Acc(1) / std::sqrt(sq / Acc(n) + Acc(eps));
    for (std::size_t j = 0; j < n; ++j)
      yr[j] = static_cast<float>(Acc(xr[j]) * (gamma ? rstd * Acc(gamma[j]) : rstd));
  }
}

}  // namespace emha

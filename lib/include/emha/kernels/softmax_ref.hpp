#pragma once
// Scalar reference of softmax_f32 (same contract), the oracle of its tests. Acc = double gives
// the float64 check.

#include <cmath>
#include <cstddef>
#include <limits>

#include "emha/kernels/softmax.hpp"

namespace emha {

template <class Acc = float>
void softmax_f32_ref(std::size_t rows, std::size_t n, const float* x, std::size_t ldx, float* y,
                     std::size_t ldy, const SoftmaxOptions& o = {}) noexcept {
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

}  // namespace emha

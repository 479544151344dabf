// SPDX-License-Identifier: Apache-2.0
#pragma once
// The float32 error bound of softmax_f32, for tests/kernels/test_softmax.cpp (host and firmware)
// and test_softmax_host.cpp, whose comment derives it:
//   |y - y64| <= y64 * (4 max|z| + n + 16) * u + 1e-37, twice that against the float reference,
// with z = scale * x + mask over the row's finite values.

#include <cmath>
#include <cstddef>

#include "emha/kernels/softmax.hpp"
#include "support/numeric.hpp"

namespace emha::test {

// Violations over rows x ld outputs (row stride ld >= n): y (softmax_f32), y_ref (softmax_f32_ref)
// and y64 (softmax_f32_ref<double>) of x under opt. The padding columns [n, ld) must still hold
// `pad_value`, which the caller wrote there before the call.
inline std::size_t softmax_bound_violations(std::size_t rows, std::size_t n, std::size_t ld,
                                            const float* x, const SoftmaxOptions& opt,
                                            const float* y, const float* y_ref, const float* y64,
                                            float pad_value) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < rows; ++i) {
    double zmax = 0;
    const float* m = opt.mask ? opt.mask + i * opt.ldmask : nullptr;
    for (std::size_t j = 0; j < n; ++j) {
      const double z = double(opt.scale) * x[i * ld + j] + (m ? m[j] : 0.0);
      if (std::isfinite(z)) zmax = std::fmax(zmax, std::fabs(z));
    }
    for (std::size_t j = 0; j < ld; ++j) {
      const std::size_t k = i * ld + j;
      if (j >= n) {  // padding never written
        bad += y[k] != pad_value;
        continue;
      }
      const double tol = y64[k] * (4 * zmax + double(n) + 16) * u32 + 1e-37;
      bad += !(std::fabs(y[k] - y64[k]) <= tol);
      bad += !(std::fabs(y[k] - y_ref[k]) <= 2 * tol);
    }
  }
  return bad;
}

}  // namespace emha::test

// SPDX-License-Identifier: Apache-2.0
// quantize_rows_s8 (emha/kernels/quant.hpp): compiled once (no instruction-set variants).

#include <cmath>

#include "emha/kernels/quant.hpp"

namespace emha {

void quantize_rows_s8(std::size_t rows, std::size_t n, const float* x, std::size_t ldx, std::int8_t* q,
                      std::size_t ldq, float* scale) noexcept {
  for (std::size_t r = 0; r < rows; ++r, x += ldx, q += ldq) {
    float amax = 0.0f;
    for (std::size_t j = 0; j < n; ++j) amax = std::fabs(x[j]) > amax ? std::fabs(x[j]) : amax;
    const float s = amax / 127.0f;
    scale[r] = s;
    for (std::size_t j = 0; j < n; ++j) {
      // x / s is within [-127, 127] up to one rounding: the clamp only guards that rounding.
      const float v = s > 0.0f ? std::nearbyint(x[j] / s) : 0.0f;
      q[j] = std::int8_t(v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v);
    }
  }
}

}  // namespace emha

// SPDX-License-Identifier: Apache-2.0
// mask_softcap_f32 (emha/kernels/mask.hpp): compiled once, one scalar body (no instruction-set
// variants), transformers' three float steps: divide, tanh, multiply.
//
// tanh from expf, which the softmax links anyway: the cap is a run-time value of the one compiled
// pass, so every firmware with a float layer links this function, and libm's tanhf would add
// about 1 KB of flash to all of them. Below |y| = 0.5 tanh's Taylor series to y^15 (the first term
// left out is below 5e-9); above it 1 - 2 / (e^(2|y|) + 1) (|y| = 0.5 loses one bit to the
// subtraction). Within a few float ulps of tanh (tests/kernels/test_mask.cpp: 6 u relative with
// the division and the product); NaN stays NaN, +-inf gives +-cap.

#include <cmath>

#include "emha/kernels/mask.hpp"

namespace emha {
namespace {

float tanh_f32(float y) noexcept {
  const float a = std::fabs(y);
  if (a < 0.5f) {
    const float z = y * y;
    float p = -929569.0f / 638512875.0f;
    p = p * z + 21844.0f / 6081075.0f;
    p = p * z - 1382.0f / 155925.0f;
    p = p * z + 62.0f / 2835.0f;
    p = p * z - 17.0f / 315.0f;
    p = p * z + 2.0f / 15.0f;
    p = p * z - 1.0f / 3.0f;
    return y + y * z * p;
  }
  const float t = 1.0f - 2.0f / (std::exp(2.0f * a) + 1.0f);  // NaN stays NaN
  return y < 0.0f ? -t : t;
}

}  // namespace

void mask_softcap_f32(std::size_t rows, std::size_t cols, float cap, float* s, std::size_t lds) noexcept {
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j) {
      float& v = s[i * lds + j];
      v = tanh_f32(v / cap) * cap;
    }
}

}  // namespace emha

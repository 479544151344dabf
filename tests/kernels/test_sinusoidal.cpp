// SPDX-License-Identifier: Apache-2.0
// sinusoidal_table_f32 bit for bit against the blog encoder block's Python loop
// (tests/kernels/fixtures, `sinusoidal::pe`), and within float32 angle rounding of the PyTorch
// tutorial's float32 formula (`sinusoidal::tutorial`): |difference| <= (p + 1) * 2^-22 at position p;
// within 2 float ulps of sin and cos with the target's libm. On the host and the firmware, static
// buffers.

#include <cmath>
#include <cstring>
#include <cstddef>

#include "emha/kernels/sinusoidal.hpp"
#include "fixtures/kernels.hpp"
#include "support/unit.hpp"

using emha::Status;

EMHA_TEST_CASE("sinusoidal_table_f32 matches the blog's encoding, interleaved sin and cos") {
  using F = emha::kernel_fixtures::sinusoidal;
  static float pe[F::positions * F::d];
  for (float& v : pe) v = -2.0f;
  EMHA_CHECK(emha::sinusoidal_table_f32(F::positions, F::d, pe) == Status::ok);
  EMHA_CHECK(std::memcmp(pe, F::pe, sizeof pe) == 0);
  std::size_t far = 0;
  double worst = 0;
  for (std::size_t p = 0; p < F::positions; ++p)
    for (std::size_t j = 0; j < F::d; ++j) {
      const double diff = std::fabs(double(pe[p * F::d + j]) - double(F::tutorial[p * F::d + j]));
      if (diff > worst) worst = diff;
      far += !(diff <= double(p + 1) * std::ldexp(1.0, -22));
    }
  EMHA_MESSAGE("sinusoidal_table_f32 vs the PyTorch tutorial's float32 formula: max |difference| " << worst);
  EMHA_CHECK(far == 0);
  EMHA_CHECK(pe[0] == 0.0f);  // sin(0)
  EMHA_CHECK(pe[1] == 1.0f);  // cos(0)
}

EMHA_TEST_CASE("sinusoidal_table_f32 refuses an odd or zero width and a null table") {
  float pe[6] = {7, 7, 7, 7, 7, 7};
  EMHA_CHECK(emha::sinusoidal_table_f32(2, 3, pe) == Status::invalid_argument);
  EMHA_CHECK(emha::sinusoidal_table_f32(2, 0, pe) == Status::invalid_argument);
  EMHA_CHECK(emha::sinusoidal_table_f32(2, 2, nullptr) == Status::null_pointer);
  EMHA_CHECK(pe[0] == 7.0f);
  EMHA_CHECK(emha::sinusoidal_table_f32(0, 2, nullptr) == Status::ok);
}

// 5 positions x 8: pe[p][2i] = sin(p / 10000^(2i/8)), pe[p][2i+1] = cos(...), each within 2 float
// ulps of the float64 value.
EMHA_TEST_CASE("sinusoidal_table_f32 within 2 ulps of sin and cos") {
  float pe[5 * 8];
  EMHA_CHECK(emha::sinusoidal_table_f32(5, 8, pe) == Status::ok);
  const auto close = [](float x, double expect) { return std::fabs(double(x) - expect) <= std::fabs(expect) * 2.4e-7; };
  for (int p = 0; p < 5; ++p)
    for (int i = 0; i < 4; ++i) {
      const double angle = p / std::pow(10000.0, 2.0 * i / 8.0);
      EMHA_INFO("position " << p << ", pair " << i);
      EMHA_CHECK(close(pe[p * 8 + 2 * i], std::sin(angle)));
      EMHA_CHECK(close(pe[p * 8 + 2 * i + 1], std::cos(angle)));
    }
}

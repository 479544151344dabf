// SPDX-License-Identifier: Apache-2.0
// sinusoidal_table_f32 bit for bit against the blog encoder block's Python loop
// (tests/kernels/fixtures, `sinusoidal::pe`), and within float32 angle rounding of the PyTorch
// tutorial's float32 formula (`sinusoidal::tutorial`): |difference| <= (p + 1) * 2^-22 at position p.

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "emha/kernels/sinusoidal.hpp"
#include "fixtures/kernels.hpp"

using emha::Status;

TEST_CASE("sinusoidal_table_f32 matches the blog's encoding, interleaved sin and cos") {
  using F = emha::kernel_fixtures::sinusoidal;
  std::vector<float> pe(F::positions * F::d, -2.0f);
  REQUIRE(emha::sinusoidal_table_f32(F::positions, F::d, pe.data()) == Status::ok);
  CHECK(std::memcmp(pe.data(), F::pe, pe.size() * sizeof(float)) == 0);
  std::size_t far = 0;
  double worst = 0;
  for (std::size_t p = 0; p < F::positions; ++p)
    for (std::size_t j = 0; j < F::d; ++j) {
      const double diff = std::fabs(double(pe[p * F::d + j]) - double(F::tutorial[p * F::d + j]));
      if (diff > worst) worst = diff;
      far += !(diff <= double(p + 1) * std::ldexp(1.0, -22));
    }
  MESSAGE("sinusoidal_table_f32 vs the PyTorch tutorial's float32 formula: max |difference| " << worst);
  CHECK(far == 0);
  CHECK(pe[0] == 0.0f);  // sin(0)
  CHECK(pe[1] == 1.0f);  // cos(0)
}

TEST_CASE("sinusoidal_table_f32 refuses an odd or zero width and a null table") {
  float pe[6] = {7, 7, 7, 7, 7, 7};
  CHECK(emha::sinusoidal_table_f32(2, 3, pe) == Status::invalid_argument);
  CHECK(emha::sinusoidal_table_f32(2, 0, pe) == Status::invalid_argument);
  CHECK(emha::sinusoidal_table_f32(2, 2, nullptr) == Status::null_pointer);
  CHECK(pe[0] == 7.0f);
  CHECK(emha::sinusoidal_table_f32(0, 2, nullptr) == Status::ok);
}

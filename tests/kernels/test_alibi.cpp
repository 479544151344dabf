// SPDX-License-Identifier: Apache-2.0
// ALiBi: alibi_slopes bit for bit against the paper's reference code (tests/kernels/fixtures:
// get_slopes for 1-16, 24 and 32 heads, including the non-power-of-two counts 6 and 12 that
// wrong variants in the wild get wrong), and mask_alibi_f32 bit for bit against its scalar
// reference and exactly against float64 (one rounding for the product, one for the add) over
// tail lengths, tile offsets and both signs of the distance.

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "emha/kernels/mask.hpp"
#include "emha/kernels/mask_ref.hpp"
#include "fixtures/kernels.hpp"
#include "support/numeric.hpp"

using emha::Status;

TEST_CASE("alibi_slopes match the reference get_slopes, power-of-two head counts or not") {
  using F = emha::kernel_fixtures::alibi;
  std::size_t at = 0;
  for (std::size_t n : F::heads) {
    std::vector<float> s(n, -1.0f);
    REQUIRE(emha::alibi_slopes(n, s.data()) == Status::ok);
    INFO("heads = " << n);
    CHECK(std::memcmp(s.data(), F::slopes + at, n * sizeof(float)) == 0);
    at += n;
  }
  CHECK(at == sizeof F::slopes / sizeof(float));
  float s8[8];
  REQUIRE(emha::alibi_slopes(8, s8) == Status::ok);
  CHECK(s8[0] == 0.5f);  // 2^(-8/8)
  CHECK(s8[7] == 1.0f / 256.0f);
  CHECK(emha::alibi_slopes(0, s8) == Status::invalid_argument);
  CHECK(emha::alibi_slopes(4, nullptr) == Status::null_pointer);
}

TEST_CASE("mask_alibi_f32 over tail lengths and tile offsets") {
  std::uint64_t seed = 1;
  for (std::size_t cols : emha::test::tail_sizes) {
    const std::size_t rows = cols % 5 + 2, lds = cols + 3;
    for (std::ptrdiff_t diagonal : {std::ptrdiff_t(0), std::ptrdiff_t(7), -std::ptrdiff_t(cols), std::ptrdiff_t(-2)}) {
      const auto s0 = emha::test::uniform(rows * lds, seed++, -4.0f, 4.0f);
      std::vector<float> s = s0, r = s0;
      const float slope = 0.0625f * float(seed % 7 + 1) / 3.0f;
      emha::mask_alibi_f32(rows, cols, diagonal, slope, s.data(), lds);
      emha::mask_alibi_f32_ref(rows, cols, diagonal, slope, r.data(), lds);
      INFO("cols=" << cols << " diagonal=" << diagonal);
      CHECK(std::memcmp(s.data(), r.data(), s.size() * sizeof(float)) == 0);
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < lds; ++j) {
          const double distance = std::fabs(double(std::ptrdiff_t(i) + diagonal - std::ptrdiff_t(j)));
          // the float32 product, rounded, then the add, rounded: what float64 math rounds to
          const float bias = float(-double(slope) * distance);
          const float expect = j < cols ? float(double(s0[i * lds + j]) + double(bias)) : s0[i * lds + j];
          wrong += s[i * lds + j] != expect;
        }
      CHECK(wrong == 0);
    }
  }
}

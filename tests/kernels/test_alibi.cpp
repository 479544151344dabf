// SPDX-License-Identifier: Apache-2.0
// ALiBi: alibi_slopes bit for bit against the paper's reference code (tests/kernels/fixtures:
// get_slopes for 1-16, 24 and 32 heads, including the non-power-of-two counts 6 and 12 that
// wrong variants in the wild get wrong), and mask_alibi_f32 bit for bit against its scalar
// reference and exactly against float64 (one rounding for the product, one for the add) over
// tail lengths, tile offsets and both signs of the distance; and the slopes of 12 heads in closed
// form with the target's libm. On the host and the firmware, static buffers.

#include <cmath>
#include <cstring>
#include <cstddef>

#include "emha/kernels/mask.hpp"
#include "emha/kernels/mask_ref.hpp"
#include "fixtures/kernels.hpp"
#include "support/numeric.hpp"
#include "support/unit.hpp"

using emha::Status;

namespace {
constexpr std::size_t max_rows = 6, max_lds = 127 + 3;
float g_slopes[32], g_s0[max_rows * max_lds], g_s[max_rows * max_lds], g_r[max_rows * max_lds];
}  // namespace

EMHA_TEST_CASE("alibi_slopes match the reference get_slopes, power-of-two head counts or not") {
  using F = emha::kernel_fixtures::alibi;
  std::size_t at = 0;
  for (std::size_t n : F::heads) {
    for (std::size_t i = 0; i < n; ++i) g_slopes[i] = -1.0f;
    EMHA_INFO("heads = " << n);
    EMHA_CHECK(emha::alibi_slopes(n, g_slopes) == Status::ok);
    EMHA_CHECK(std::memcmp(g_slopes, F::slopes + at, n * sizeof(float)) == 0);
    at += n;
  }
  EMHA_CHECK(at == sizeof F::slopes / sizeof(float));
  float s8[8];
  EMHA_CHECK(emha::alibi_slopes(8, s8) == Status::ok);
  EMHA_CHECK(s8[0] == 0.5f);  // 2^(-8/8)
  EMHA_CHECK(s8[7] == 1.0f / 256.0f);
  EMHA_CHECK(emha::alibi_slopes(0, s8) == Status::invalid_argument);
  EMHA_CHECK(emha::alibi_slopes(4, nullptr) == Status::null_pointer);
}

EMHA_TEST_CASE("mask_alibi_f32 over tail lengths and tile offsets") {
  std::uint64_t seed = 1;
  for (std::size_t cols : emha::test::tail_sizes) {
    const std::size_t rows = cols % 5 + 2, lds = cols + 3;
    for (std::ptrdiff_t diagonal : {std::ptrdiff_t(0), std::ptrdiff_t(7), -std::ptrdiff_t(cols), std::ptrdiff_t(-2)}) {
      float* const s0 = g_s0;
      float* const s = g_s;
      float* const r = g_r;
      emha::test::fill_uniform(s0, rows * lds, seed++, -4.0f, 4.0f);
      std::memcpy(s, s0, rows * lds * sizeof(float));
      std::memcpy(r, s0, rows * lds * sizeof(float));
      const float slope = 0.0625f * float(seed % 7 + 1) / 3.0f;
      emha::mask_alibi_f32(rows, cols, diagonal, slope, s, lds);
      emha::mask_alibi_f32_ref(rows, cols, diagonal, slope, r, lds);
      EMHA_INFO("cols=" << cols << " diagonal=" << long(diagonal));
      EMHA_CHECK(std::memcmp(s, r, rows * lds * sizeof(float)) == 0);
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < lds; ++j) {
          const double distance = std::fabs(double(std::ptrdiff_t(i) + diagonal - std::ptrdiff_t(j)));
          // the float32 product, rounded, then the add, rounded: what float64 math rounds to
          const float bias = float(-double(slope) * distance);
          const float expect = j < cols ? float(double(s0[i * lds + j]) + double(bias)) : s0[i * lds + j];
          wrong += s[i * lds + j] != expect;
        }
      EMHA_CHECK(wrong == 0);
    }
  }
}

// 12 heads: the 8 slopes of 8 (2^-1 .. 2^-8, exact), then slopes 0, 2, 4, 6 of 16 (2^-0.5,
// 2^-1.5, 2^-2.5, 2^-3.5) within 2 float ulps of the float64 powers.
EMHA_TEST_CASE("alibi_slopes(12): 2^-1 .. 2^-8, then 2^-0.5 .. 2^-3.5") {
  EMHA_CHECK(emha::alibi_slopes(12, g_slopes) == Status::ok);
  for (int k = 0; k < 8; ++k) EMHA_CHECK(g_slopes[k] == std::ldexp(1.0f, -(k + 1)));
  for (int k = 0; k < 4; ++k) {
    const double expect = std::pow(2.0, -0.5 - k);
    EMHA_CHECK(std::fabs(double(g_slopes[8 + k]) - expect) <= expect * 2.4e-7);
  }
}

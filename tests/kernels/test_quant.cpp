// SPDX-License-Identifier: Apache-2.0
// quantize_rows_s8 and dequantize_rows_s8 (emha/kernels/quant.hpp) on the host and the firmware:
// every row length up to 2 x 16 lanes + 3 (each tail of every variant), padded strides, rows of
// different magnitudes, a row of zeros. Against float64 math: scale = amax / 127 in float, every q
// within half a step of x / scale (the rounding) and in [-127, 127], the largest |x| at +-127;
// dequantize_rows_s8 gives its reference's bits (float(q) * scale, one rounding) and writes no
// padding.

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "emha/kernels/quant.hpp"
#include "emha/kernels/quant_ref.hpp"
#include "support/numeric.hpp"
#include "support/unit.hpp"

namespace {

constexpr std::size_t max_n = 35, max_rows = 3, pad = 5, ld = max_n + pad;
float g_x[max_rows * ld], g_scale[max_rows], g_y[max_rows * ld], g_y_ref[max_rows * ld];
std::int8_t g_q[max_rows * ld];

}  // namespace

EMHA_TEST_CASE("quantize_rows_s8 and dequantize_rows_s8 over every tail, against float64") {
  std::size_t bad_scale = 0, bad_round = 0, bad_range = 0, bad_max = 0, bad_bits = 0, pad_written = 0;
  for (std::size_t n = 1; n <= max_n; ++n) {
    const std::size_t rows = 1 + n % max_rows;
    emha::test::fill_uniform(g_x, rows * ld, 100 + n, -1.0f, 1.0f);
    for (std::size_t r = 0; r < rows; ++r)  // magnitudes 1, 1000, 1e-3
      for (std::size_t j = 0; j < n; ++j) g_x[r * ld + j] *= r == 1 ? 1000.0f : r == 2 ? 1e-3f : 1.0f;
    for (std::size_t i = 0; i < rows * ld; ++i) {
      g_q[i] = 99;
      g_y[i] = g_y_ref[i] = -7.0f;
    }
    emha::quantize_rows_s8(rows, n, g_x, ld, g_q, ld, g_scale);
    emha::dequantize_rows_s8(rows, n, g_q, ld, g_scale, g_y, ld);
    emha::dequantize_rows_s8_ref(rows, n, g_q, ld, g_scale, g_y_ref, ld);
    for (std::size_t r = 0; r < rows; ++r) {
      double amax = 0;
      std::size_t at = 0;
      for (std::size_t j = 0; j < n; ++j)
        if (std::fabs(double(g_x[r * ld + j])) > amax) amax = std::fabs(double(g_x[r * ld + j])), at = j;
      const float want = float(amax) / 127.0f;  // amax is a float: this is the contract's float division
      bad_scale += g_scale[r] != want;
      const double s = g_scale[r];
      for (std::size_t j = 0; j < n; ++j) {
        const int q = g_q[r * ld + j];
        bad_range += q < -127 || q > 127;
        bad_round += std::fabs(double(q) - double(g_x[r * ld + j]) / s) > 0.5 + 1e-5;
        bad_bits += g_y[r * ld + j] != g_y_ref[r * ld + j] ||
                    std::fabs(double(g_y_ref[r * ld + j]) - double(q) * s) > emha::test::u32 * std::fabs(double(q) * s);
      }
      bad_max += std::abs(int(g_q[r * ld + at])) != 127;
      for (std::size_t j = n; j < ld; ++j) pad_written += g_q[r * ld + j] != 99 || g_y[r * ld + j] != -7.0f;
    }
  }
  EMHA_CHECK(bad_scale == 0);
  EMHA_CHECK(bad_round == 0);
  EMHA_CHECK(bad_range == 0);
  EMHA_CHECK(bad_max == 0);
  EMHA_CHECK(bad_bits == 0);
  EMHA_CHECK(pad_written == 0);
}

EMHA_TEST_CASE("quantize_rows_s8: a row of zeros has scale 0 and dequantizes to zeros") {
  for (std::size_t j = 0; j < max_n; ++j) g_x[j] = 0.0f;
  g_x[max_n] = 5.0f;  // the next row: unaffected by the first
  for (std::size_t j = 1; j < max_n; ++j) g_x[max_n + j] = -1.0f;
  emha::quantize_rows_s8(2, max_n, g_x, max_n, g_q, max_n, g_scale);
  emha::dequantize_rows_s8(2, max_n, g_q, max_n, g_scale, g_y, max_n);
  std::size_t nonzero = 0;
  for (std::size_t j = 0; j < max_n; ++j) nonzero += g_q[j] != 0 || g_y[j] != 0.0f;
  EMHA_CHECK(g_scale[0] == 0.0f);
  EMHA_CHECK(nonzero == 0);
  EMHA_CHECK(g_q[max_n] == 127);
  EMHA_CHECK(g_q[max_n + 1] == -25);  // -1 / (5 / 127) = -25.4
}

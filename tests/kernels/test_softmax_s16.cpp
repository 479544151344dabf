// SPDX-License-Identifier: Apache-2.0
// The 16x8 layer's elementwise arithmetic against TFLite's code re-implemented in Python
// (gen_s16_fixtures.py -> fixtures/s16.hpp), on the host and the firmware:
//   - emha's two softmax tables equal TFLite Micro's LUTPopulate<int16_t> computed there;
//   - requantize_s64 (TFLite's int64 MultiplyByQuantizedMultiplier) on sums of every magnitude
//     and the multipliers whose Q15 rounding saturates; requantize_s16 and its reference give
//     the same saturated values, per channel with a bias and per tensor;
//   - softmax_s16, every output of 40 rows (1 to 300 keys, input scales 1e-4 to 0.05, ties at
//     the maximum, differences past -10), both roundings, with a row stride and in place.

#include <cstddef>
#include <cstdint>

#include "emha/kernels/requantize_s16.hpp"
#include "emha/kernels/requantize_s16_ref.hpp"
#include "emha/kernels/softmax_s16.hpp"
#include "kernels/fixtures/s16.hpp"
#include "support/unit.hpp"

namespace {

namespace fx = s16_fixtures;
constexpr std::size_t n_requant = sizeof fx::requant_y / sizeof fx::requant_y[0];
constexpr std::size_t pad = 2;
std::int16_t g_x[300 + pad], g_y[300 + pad], g_out[n_requant + 1], g_out_ref[n_requant + 1];
std::int64_t g_bias[n_requant];

}  // namespace

EMHA_TEST_CASE("softmax_s16's tables are TFLite Micro's") {
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < 513; ++i) {
    wrong += emha::detail::softmax_s16_exp_lut[i] != fx::exp_lut[i];
    wrong += emha::detail::softmax_s16_one_over_one_plus_x_lut[i] != fx::one_over_one_plus_x_lut[i];
  }
  EMHA_CHECK(wrong == 0);
}

EMHA_TEST_CASE("requantize_s64 and requantize_s16 are TFLite's int64 requantization") {
  std::size_t wrong = 0, bad_vec = 0;
  for (std::size_t i = 0; i < n_requant; ++i) wrong += emha::requantize_s64(fx::requant_x[i], fx::requant_q[i]) != fx::requant_y[i];
  EMHA_CHECK(wrong == 0);
  // Per channel with a bias (the sum split between acc and bias), then per tensor.
  for (std::size_t i = 0; i < n_requant; ++i) g_bias[i] = fx::requant_x[i] / 3;
  static std::int64_t acc[n_requant];
  for (std::size_t i = 0; i < n_requant; ++i) acc[i] = fx::requant_x[i] - g_bias[i];
  g_out[n_requant] = g_out_ref[n_requant] = 77;
  emha::requantize_s16(n_requant, acc, g_bias, fx::requant_q, 1, g_out, 1);
  emha::requantize_s16_ref(n_requant, acc, g_bias, fx::requant_q, 1, g_out_ref, 1);
  for (std::size_t i = 0; i < n_requant; ++i) {
    const std::int32_t y = fx::requant_y[i], want = y > INT16_MAX ? INT16_MAX : y < INT16_MIN ? INT16_MIN : y;
    bad_vec += (g_out[i] != want) + (g_out_ref[i] != want);
  }
  const emha::QuantizedMultiplier one = fx::requant_q[5];
  emha::requantize_s16(n_requant, fx::requant_x, nullptr, &one, 0, g_out, 1);
  for (std::size_t i = 0; i < n_requant; ++i) {
    const std::int32_t y = emha::requantize_s64(fx::requant_x[i], one);
    bad_vec += g_out[i] != (y > INT16_MAX ? INT16_MAX : y < INT16_MIN ? INT16_MIN : y);
  }
  EMHA_CHECK(bad_vec == 0);
  EMHA_CHECK(g_out[n_requant] == 77);
  EMHA_CHECK(g_out_ref[n_requant] == 77);
}

EMHA_TEST_CASE("softmax_s16 gives TFLite's int16 softmax") {
  std::size_t wrong = 0, wrong_in_place = 0, overwritten = 0, rows = 0, at = 0;
  for (std::size_t r = 0; r < sizeof fx::softmax_cols / sizeof fx::softmax_cols[0]; ++r) {
    const std::size_t n = fx::softmax_cols[r];
    const emha::SoftmaxS16Params p{fx::softmax_params[r]};
    for (std::size_t j = 0; j < n + pad; ++j) {
      g_x[j] = j < n ? fx::softmax_x[at + j] : std::int16_t(99);
      g_y[j] = 42;
    }
    if (fx::softmax_single[r])
      emha::softmax_s16<emha::Rounding::single_rounding>(1, n, g_x, n + pad, p, g_y, n + pad);
    else
      emha::softmax_s16<emha::Rounding::double_rounding>(1, n, g_x, n + pad, p, g_y, n + pad);
    for (std::size_t j = 0; j < n; ++j) wrong += g_y[j] != fx::softmax_y[at + j];
    for (std::size_t j = n; j < n + pad; ++j) overwritten += g_y[j] != 42;
    if (fx::softmax_single[r])  // in place
      emha::softmax_s16<emha::Rounding::single_rounding>(1, n, g_x, n, p, g_x, n);
    else
      emha::softmax_s16<emha::Rounding::double_rounding>(1, n, g_x, n, p, g_x, n);
    for (std::size_t j = 0; j < n; ++j) wrong_in_place += g_x[j] != fx::softmax_y[at + j];
    at += n;
    ++rows;
  }
  EMHA_CHECK(rows == 40);
  EMHA_CHECK(wrong == 0);
  EMHA_CHECK(wrong_in_place == 0);
  EMHA_CHECK(overwritten == 0);
}

// SPDX-License-Identifier: Apache-2.0
// requantize_s8 (emha/kernels/requantize_s8.hpp) on the host and the firmware: the 2,565 cases of
// fixtures/requant.hpp (TFLite's and CMSIS-NN's arithmetic re-implemented in Python) run through
// it with a multiplier per channel, every byte the clamp of TFLite's value, both roundings; and
// against requantize_s8_ref over every count of lanes and tail (n 0-37: two vectors of 16 lanes
// and every tail of 4, 8 or 16), per channel and per tensor, with and without a bias, strided
// output, zero points at both ends, sums that land in int8 and sums that saturate. Nothing is
// written past the n outputs. requantize_s8_channels over every row and channel tail.

#include <cstddef>
#include <cstdint>

#include "emha/kernels/requantize_s8.hpp"
#include "emha/kernels/requantize_s8_ref.hpp"
#include "kernels/fixtures/requant.hpp"
#include "support/unit.hpp"

namespace {

using emha::QuantizedMultiplier;
using emha::Rounding;
namespace fx = emha::requant_fixtures;

constexpr std::size_t count = sizeof fx::cases / sizeof fx::cases[0], max_n = 37, max_ld = 3;
std::int32_t g_acc[count], g_bias[max_n];
QuantizedMultiplier g_q[count];
std::int8_t g_y[count], g_y_ref[max_n * max_ld + 4];

std::int8_t clamp8(std::int32_t v) { return static_cast<std::int8_t>(v > 127 ? 127 : v < -128 ? -128 : v); }

std::uint32_t next(std::uint32_t& s) {
  s = s * 1664525u + 1013904223u;
  return s;
}

}  // namespace

EMHA_TEST_CASE("requantize_s8: TFLite's value, clamped, for every case of the requantization fixture") {
  for (std::size_t i = 0; i < count; ++i) {
    g_acc[i] = fx::cases[i].x;
    g_q[i] = {fx::cases[i].multiplier, fx::cases[i].shift};
  }
  std::size_t wrong_double = 0, wrong_single = 0, in_range = 0;
  emha::requantize_s8(count, g_acc, nullptr, g_q, 1, Rounding::double_rounding, 0, g_y, 1);
  for (std::size_t i = 0; i < count; ++i) {
    wrong_double += g_y[i] != clamp8(fx::cases[i].double_rounding);
    in_range += fx::cases[i].double_rounding >= -128 && fx::cases[i].double_rounding <= 127;
  }
  emha::requantize_s8(count, g_acc, nullptr, g_q, 1, Rounding::single_rounding, 0, g_y, 1);
  for (std::size_t i = 0; i < count; ++i)
    wrong_single += fx::cases[i].single_valid && g_y[i] != clamp8(fx::cases[i].single_rounding);
  EMHA_CHECK(in_range > 500);  // the cases are not all saturated
  EMHA_CHECK(wrong_double == 0);
  EMHA_CHECK(wrong_single == 0);
}

EMHA_TEST_CASE("requantize_s8 over every tail gives requantize_s8_ref's bytes") {
  std::size_t wrong = 0, written = 0, cases = 0;
  std::uint32_t seed = 7;
  for (int r = 0; r < 2; ++r)
    for (std::size_t n = 0; n <= max_n; ++n)
      for (std::size_t step = 0; step < 2; ++step)
        for (std::size_t ld = 1; ld <= max_ld; ld += 2)
          for (int with_bias = 0; with_bias < 2; ++with_bias) {
            const Rounding rounding = r ? Rounding::single_rounding : Rounding::double_rounding;
            for (std::size_t j = 0; j < max_n; ++j) {
              const std::int32_t shift = std::int32_t(next(seed) % 30) - 26;  // [-26, 3]
              g_q[j] = {std::int32_t((1u << 30) | (next(seed) >> 2)), shift};
              // Sums near 2^(31 - shift) / multiplier * [-200, 200]: in int8 and past it.
              const std::int32_t span = shift >= 0 ? 200 : std::int32_t(200u << (-shift > 22 ? 22 : -shift));
              g_acc[j] = std::int32_t(next(seed) % std::uint32_t(2 * span + 1)) - span;
              g_bias[j] = std::int32_t(next(seed) % 2001) - 1000;
            }
            g_acc[0] = n % 3 == 0 ? INT32_MIN : n % 3 == 1 ? INT32_MAX : g_acc[0];
            const std::int32_t zp = n % 2 ? -128 : 127 - std::int32_t(n);
            const std::int32_t* bias = with_bias ? g_bias : nullptr;
            for (std::size_t i = 0; i < max_n * max_ld + 4; ++i) g_y[i] = g_y_ref[i] = 55;
            emha::requantize_s8(n, g_acc, bias, g_q, step, rounding, zp, g_y, ld);
            emha::requantize_s8_ref(n, g_acc, bias, g_q, step, rounding, zp, g_y_ref, ld);
            for (std::size_t i = 0; i < max_n * max_ld + 4; ++i) {
              wrong += g_y[i] != g_y_ref[i];
              written += (i % ld != 0 || i >= n * ld) && g_y[i] != 55;
            }
            ++cases;
          }
  EMHA_CHECK(cases == 608);
  EMHA_CHECK(wrong == 0);
  EMHA_CHECK(written == 0);
}

// Small right shifts (1 to 4) over every accumulator in [-72, 72]: a tie of the rounding divide
// in every other output or so, where half away from zero and half up differ (negative ties).
// Per tensor and per channel, with and without a bias, contiguous and strided.
EMHA_TEST_CASE("requantize_s8 rounds the divide's ties half away from zero at small shifts") {
  constexpr std::size_t n = 145;
  static std::int32_t acc[n], bias[n];
  static QuantizedMultiplier q[n];
  static std::int8_t y[n * 2], y_ref[n * 2];
  std::size_t wrong = 0, cases = 0;
  for (std::int32_t right = 1; right <= 4; ++right)
    for (std::size_t step = 0; step < 2; ++step)
      for (std::size_t ld = 1; ld <= 2; ++ld)
        for (int with_bias = 0; with_bias < 2; ++with_bias) {
          for (std::size_t j = 0; j < n; ++j) {
            acc[j] = std::int32_t(j) - 72;
            bias[j] = std::int32_t(j % 5) - 2;
            q[j] = {std::int32_t((1u << 30) + std::uint32_t(step * j)), -right};  // about 1/2: x = acc/2 + ...
          }
          for (std::size_t i = 0; i < n * 2; ++i) y[i] = y_ref[i] = 0;
          const std::int32_t* b = with_bias ? bias : nullptr;
          emha::requantize_s8(n, acc, b, q, step, Rounding::double_rounding, 3, y, ld);
          emha::requantize_s8_ref(n, acc, b, q, step, Rounding::double_rounding, 3, y_ref, ld);
          for (std::size_t i = 0; i < n * 2; ++i) wrong += y[i] != y_ref[i];
          ++cases;
        }
  EMHA_CHECK(cases == 32);
  EMHA_CHECK(wrong == 0);
}

// requantize_s8_channels against requantize_s8_channels_ref: m 1-7 rows (none, one and two
// blocks of three and every leftover), n 0-13 channels (up to three vectors of 4 and every
// tail), acc's rows padded, y row-major or transposed (V^T's layout), with and without a bias,
// both roundings. Nothing is written outside the m x n outputs.
EMHA_TEST_CASE("requantize_s8_channels over every row and channel tail gives the reference's bytes") {
  constexpr std::size_t max_m = 7, max_c = 13, lda = max_c + 3, y_len = (max_m + 2) * (max_c + 2);
  static std::int32_t acc[max_m * lda], bias[max_c];
  static QuantizedMultiplier q[max_c];
  static std::int8_t y[y_len], y_ref[y_len];
  std::size_t wrong = 0, written = 0, cases = 0;
  std::uint32_t seed = 11;
  for (int r = 0; r < 2; ++r)
    for (std::size_t m = 1; m <= max_m; ++m)
      for (std::size_t n = 0; n <= max_c; ++n)
        for (int transposed = 0; transposed < 2; ++transposed)
          for (int with_bias = 0; with_bias < 2; ++with_bias) {
            const Rounding rounding = r ? Rounding::single_rounding : Rounding::double_rounding;
            for (std::size_t j = 0; j < max_c; ++j) {
              const std::int32_t shift = std::int32_t(next(seed) % 30) - 26;  // [-26, 3]
              q[j] = {std::int32_t((1u << 30) | (next(seed) >> 2)), shift};
              bias[j] = std::int32_t(next(seed) % 2001) - 1000;
              const std::int32_t span = shift >= 0 ? 200 : std::int32_t(200u << (-shift > 22 ? 22 : -shift));
              for (std::size_t i = 0; i < max_m; ++i)
                acc[i * lda + j] = std::int32_t(next(seed) % std::uint32_t(2 * span + 1)) - span;
            }
            acc[0] = n % 3 == 0 ? INT32_MIN : n % 3 == 1 ? INT32_MAX : acc[0];
            const std::int32_t zp = n % 2 ? -128 : 127 - std::int32_t(n);
            const std::size_t y_row = transposed ? 1 : max_c + 2, y_col = transposed ? max_m + 2 : 1;
            for (std::size_t i = 0; i < y_len; ++i) y[i] = y_ref[i] = 55;
            const std::int32_t* b = with_bias ? bias : nullptr;
            emha::requantize_s8_channels(m, n, acc, lda, b, q, rounding, zp, y, y_row, y_col);
            emha::requantize_s8_channels_ref(m, n, acc, lda, b, q, rounding, zp, y_ref, y_row, y_col);
            for (std::size_t i = 0; i < y_len; ++i) {
              const std::size_t row = transposed ? i % y_col : i / y_row, col = transposed ? i / y_col : i % y_row;
              wrong += y[i] != y_ref[i];
              written += (row >= m || col >= n) && y[i] != 55;
            }
            ++cases;
          }
  EMHA_CHECK(cases == 2 * max_m * (max_c + 1) * 4);
  EMHA_CHECK(wrong == 0);
  EMHA_CHECK(written == 0);
}

// SPDX-License-Identifier: Apache-2.0
// softmax_s8_ref (TFLite's reference int8 softmax, output 1/256 - 128) against TFLite's code
// re-implemented in Python (gen_softmax_s8_fixtures.py -> fixtures/softmax_s8.hpp): every output
// byte of 245 rows (1 to 300 keys, input scales 1/256 to 1, keys past diff_min), both roundings,
// with a row stride, on the host and the firmware; softmax_s8_row (the exps from
// softmax_s8_table), and its form with the output through requantize_s8, give the same bytes.
// softmax_s8_exps against softmax_s8_exps_ref over every n to 40 (every tail of 4 and 16 lanes)
// and 300: every exp, the sum, nothing written past n.

#include <cstddef>
#include <cstdint>

#include "emha/kernels/softmax_s8.hpp"
#include "emha/kernels/softmax_s8_ref.hpp"
#include "kernels/fixtures/softmax_s8.hpp"
#include "support/unit.hpp"

namespace {

namespace fx = emha::softmax_s8_fixtures;
using emha::Rounding;

constexpr std::size_t pad = 3;  // a row stride past the row
std::int8_t g_x[2 * (300 + pad)], g_y[2 * (300 + pad)], g_row[300 + pad], g_row_vec[300 + pad];
std::int32_t g_exps[300 + pad], g_exps_ref[300 + pad];
emha::SoftmaxS8Table g_table;

template <Rounding R>
void check_all(const std::int8_t* expected) {
  std::size_t wrong = 0, overwritten = 0;
  for (const fx::Case& c : fx::cases) {
    const std::size_t ld = c.cols + pad;
    for (std::size_t r = 0; r < 2; ++r)  // the row twice, as two rows of a matrix
      for (std::size_t j = 0; j < ld; ++j) {
        g_x[r * ld + j] = j < c.cols ? fx::input[c.offset + j] : std::int8_t(99);
        g_y[r * ld + j] = 42;
      }
    const emha::SoftmaxS8Params& p = R == Rounding::single_rounding ? c.single_rounding : c.double_rounding;
    emha::softmax_s8_ref<R>(2, c.cols, g_x, ld, p, g_y, ld);
    for (std::size_t j = 0; j < ld; ++j) g_row[j] = 42;
    emha::softmax_s8_table<R>(p, g_table);
    emha::softmax_s8_row(c.cols, g_x, g_table, g_row);
    for (std::size_t j = 0; j < ld; ++j) g_row_vec[j] = 42;
    emha::softmax_s8_row(c.cols, g_x, g_table, g_row_vec, g_exps);  // the output through requantize_s8
    std::size_t row_wrong = 0;
    for (std::size_t j = 0; j < ld; ++j) row_wrong += j < c.cols ? g_row[j] != expected[c.offset + j] : g_row[j] != 42;
    for (std::size_t j = 0; j < ld; ++j)
      row_wrong += j < c.cols ? g_row_vec[j] != expected[c.offset + j] : g_row_vec[j] != 42;
    for (std::size_t r = 0; r < 2; ++r)
      for (std::size_t j = 0; j < ld; ++j) {
        if (j < c.cols)
          row_wrong += g_y[r * ld + j] != expected[c.offset + j];
        else
          overwritten += g_y[r * ld + j] != 42;
      }
    if (row_wrong) EMHA_MESSAGE("row at " << c.offset << " (" << c.cols << " keys): " << row_wrong << " bytes differ");
    wrong += row_wrong;
  }
  EMHA_CHECK(wrong == 0);
  EMHA_CHECK(overwritten == 0);
}

}  // namespace

EMHA_TEST_CASE("softmax_s8_ref and softmax_s8_row: TFLite's int8 softmax, every byte, double rounding") {
  check_all<Rounding::double_rounding>(fx::double_rounding);
}

EMHA_TEST_CASE("softmax_s8_ref and softmax_s8_row: TFLite's int8 softmax, every byte, single rounding") {
  check_all<Rounding::single_rounding>(fx::single_rounding);
}

EMHA_TEST_CASE("softmax_s8_exps: softmax_s8_exps_ref's exps and sum over every tail") {
  emha::softmax_s8_table(fx::cases[0].double_rounding, g_table);
  std::size_t wrong = 0, overwritten = 0, checked = 0;
  std::uint32_t seed = 11;
  for (std::size_t n = 0; n <= 41; ++n) {
    const std::size_t cols = n == 41 ? 300 : n;
    for (int spread = 0; spread < 3; ++spread) {  // keys near the max, all over, and -128 / 127
      for (std::size_t j = 0; j < cols; ++j) {
        seed = seed * 1664525u + 1013904223u;
        const int v = spread == 0   ? 100 + int(seed >> 28)
                      : spread == 1 ? int(seed >> 24) - 128
                                    : (seed >> 31 ? 127 : -128);
        g_x[j] = std::int8_t(v);
      }
      for (std::size_t j = 0; j < cols + pad; ++j) g_exps[j] = g_exps_ref[j] = -7;
      const std::int32_t sum = emha::softmax_s8_exps(cols, g_x, g_table.exp, g_exps);
      const std::int32_t sum_ref = emha::softmax_s8_exps_ref(cols, g_x, g_table.exp, g_exps_ref);
      wrong += sum != sum_ref;
      for (std::size_t j = 0; j < cols; ++j) wrong += g_exps[j] != g_exps_ref[j];
      if (cols < 300)
        for (std::size_t j = cols; j < cols + pad; ++j) overwritten += g_exps[j] != -7;
      checked += cols > 0 && sum_ref > 0;
    }
  }
  EMHA_CHECK(checked == 41 * 3);
  EMHA_CHECK(wrong == 0);
  EMHA_CHECK(overwritten == 0);
}

EMHA_TEST_CASE("fixed_point: gemmlowp's exp over Q5.26 and TFLite's reciprocal of a Q12.19 sum, raw") {
  std::size_t exp_wrong = 0, reciprocal_wrong = 0;
  for (const fx::Raw& c : fx::exp_q5) exp_wrong += emha::fixed_point::exp_on_negative_values<5>(c.in) != c.out;
  for (const fx::Raw& c : fx::reciprocal_q12) {
    int bits = -100;
    reciprocal_wrong += emha::fixed_point::reciprocal<12>(c.in, bits) != c.out || bits != c.bits;
  }
  EMHA_CHECK(exp_wrong == 0);
  EMHA_CHECK(reciprocal_wrong == 0);
}

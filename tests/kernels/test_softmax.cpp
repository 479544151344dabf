// SPDX-License-Identifier: Apache-2.0
// softmax_f32 against softmax_f32_ref<double> and softmax_f32_ref, on the host and the firmware:
// every tail length with scale, padding and additive masks, rows at +-80, and the edge cases
// (one element, fully masked rows, NaN rows, in place). Static buffers. The bound and why it holds
// are tests/support/softmax_bound.hpp's:
//   |y - y64| <= y64 * (4 max|z| + n + 16) * u + 1e-37, twice that against the float reference.
// The host's larger tests (the exp across its range, rows in groups, the online softmax) are
// test_softmax_host.cpp's.

#include <cmath>
#include <cstddef>
#include <limits>

#include "emha/kernels/softmax.hpp"
#include "emha/kernels/softmax_ref.hpp"
#include "support/numeric.hpp"
#include "support/softmax_bound.hpp"
#include "support/unit.hpp"

namespace {

using emha::SoftmaxOptions;

constexpr float inf = std::numeric_limits<float>::infinity();
// 4 rows of up to 127 + 3 floats, or 9 of up to 33.
constexpr std::size_t max_floats = 4 * (127 + 3);

float g_x[max_floats], g_mask[max_floats];
float g_y[max_floats], g_y_ref[max_floats], g_y64[max_floats];

// softmax_f32 of g_x [rows x n], row stride n + pad, within the bound of both references.
void check_softmax(std::size_t rows, std::size_t n, std::size_t pad, const SoftmaxOptions& opt) {
  const std::size_t ld = n + pad;
  for (std::size_t i = 0; i < rows * ld; ++i) g_y[i] = g_y_ref[i] = g_y64[i] = 7.0f;
  emha::softmax_f32(rows, n, g_x, ld, g_y, ld, opt);
  emha::softmax_f32_ref(rows, n, g_x, ld, g_y_ref, ld, opt);
  emha::softmax_f32_ref<double>(rows, n, g_x, ld, g_y64, ld, opt);
  const std::size_t bad = emha::test::softmax_bound_violations(rows, n, ld, g_x, opt, g_y, g_y_ref, g_y64, 7.0f);
  EMHA_INFO("rows=" << rows << " n=" << n << " pad=" << pad << " scale=" << opt.scale
                    << " mask=" << int(opt.mask != nullptr));
  EMHA_CHECK(bad == 0);
}

}  // namespace

EMHA_TEST_CASE("softmax_f32 over every tail length, with scale, padding and masks") {
  std::uint64_t seed = 1;
  for (std::size_t n : emha::test::tail_sizes) {
    emha::test::fill_uniform(g_x, 3 * n, seed++, -4, 4);
    check_softmax(3, n, 0, {});
    emha::test::fill_uniform(g_x, 2 * (n + 3), seed++, -20, 20);
    check_softmax(2, n, 3, SoftmaxOptions{0.125f});
    emha::test::fill_uniform(g_mask, 4 * n, seed++, -2, 2);
    g_mask[n / 2] = -inf;  // a masked key in row 0
    emha::test::fill_uniform(g_x, 4 * (n + 1), seed++);
    check_softmax(4, n, 1, SoftmaxOptions{0.5f, g_mask, n});
    emha::test::fill_uniform(g_x, 4 * n, seed++);
    check_softmax(4, n, 0, SoftmaxOptions{1.0f, g_mask, 0});
  }
}

EMHA_TEST_CASE("softmax_f32 rows sum to one and follow float64 at +-80 magnitudes") {
  for (std::size_t n : {1u, 9u, 33u, 127u}) {
    emha::test::fill_uniform(g_x, 2 * n, 77 + n, -80, 80);
    g_x[0] = 80.0f;
    g_x[n] = -80.0f;
    check_softmax(2, n, 0, {});
    emha::softmax_f32(2, n, g_x, n, g_y, n);
    for (std::size_t r = 0; r < 2; ++r) {
      double sum = 0;
      for (std::size_t j = 0; j < n; ++j) sum += g_y[r * n + j];
      EMHA_CHECK(std::fabs(sum - 1.0) <= (double(n) + 8) * emha::test::u32 * 4);
    }
  }
}

EMHA_TEST_CASE("softmax_f32: one element is exactly 1") {
  const float x = 3.5f;
  float y = 0;
  emha::softmax_f32(1, 1, &x, 1, &y, 1);
  EMHA_CHECK(y == 1.0f);
}

EMHA_TEST_CASE("softmax_f32: a row of all -inf gives zeros, never NaN, and other rows are unaffected") {
  for (std::size_t n : {1u, 8u, 17u}) {
    for (std::size_t j = 0; j < n; ++j) {
      g_x[j] = -inf;
      g_x[n + j] = float(j);
    }
    for (std::size_t i = 0; i < 2 * n; ++i) g_y[i] = 5.0f;
    emha::softmax_f32(2, n, g_x, n, g_y, n);
    double sum = 0;
    for (std::size_t j = 0; j < n; ++j) {
      EMHA_CHECK(g_y[j] == 0.0f);
      sum += g_y[n + j];
    }
    EMHA_CHECK(std::fabs(sum - 1.0) <= 1e-6);
  }
}

EMHA_TEST_CASE("softmax_f32: an additive mask of -inf over a whole row gives zeros") {
  emha::test::fill_uniform(g_x, 9, 3);
  for (std::size_t j = 0; j < 9; ++j) g_mask[j] = -inf, g_y[j] = 1.0f;
  emha::softmax_f32(1, 9, g_x, 9, g_y, 9, SoftmaxOptions{1.0f, g_mask, 9});
  for (std::size_t j = 0; j < 9; ++j) EMHA_CHECK(g_y[j] == 0.0f);
}

EMHA_TEST_CASE("softmax_f32: a NaN shows up as NaN in its row only") {
  // 9 rows: row 5 (in the second group of four) has the NaN; its neighbours in the group and the
  // other rows stay finite. Then 2 rows with the NaN in the first.
  for (std::size_t rows : {9u, 2u}) {
    const std::size_t nan_row = rows == 9 ? 5 : 0;
    for (std::size_t n : {1u, 3u, 8u, 9u, 33u}) {
      for (std::size_t at : {std::size_t(0), n / 2, n - 1}) {
        emha::test::fill_uniform(g_x, rows * n, n + at);
        g_x[nan_row * n + at] = std::nanf("");
        emha::softmax_f32(rows, n, g_x, n, g_y, n);
        std::size_t nan_in_row = 0, nan_elsewhere = 0;
        for (std::size_t k = 0; k < rows * n; ++k) (k / n == nan_row ? nan_in_row : nan_elsewhere) += std::isnan(g_y[k]);
        EMHA_INFO("rows=" << rows << " n=" << n << " at=" << at);
        EMHA_CHECK(nan_in_row == n);
        EMHA_CHECK(nan_elsewhere == 0);
      }
    }
  }
}

EMHA_TEST_CASE("softmax_f32: a NaN beside -inf keys is not hidden as a masked row") {
  for (std::size_t j = 0; j < 9; ++j) g_x[j] = -inf;
  g_x[4] = std::nanf("");
  emha::softmax_f32(1, 9, g_x, 9, g_y, 9);
  for (std::size_t j = 0; j < 9; ++j) EMHA_CHECK(std::isnan(g_y[j]));
}

EMHA_TEST_CASE("softmax_f32: in place") {
  emha::test::fill_uniform(g_x, 3 * 17, 5);
  emha::softmax_f32_ref<double>(3, 17, g_x, 17, g_y64, 17);
  emha::softmax_f32(3, 17, g_x, 17, g_x, 17);
  for (std::size_t i = 0; i < 3 * 17; ++i) EMHA_CHECK(std::fabs(g_x[i] - g_y64[i]) <= 1e-5 * g_y64[i] + 1e-37);
}

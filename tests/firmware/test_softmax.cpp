// SPDX-License-Identifier: Apache-2.0
// softmax_f32 against softmax_f32_ref<double> and softmax_f32_ref over tail lengths, with scale,
// padding and additive masks, and the edge cases: masked keys, fully masked rows, NaN rows.
// The bound is tests/kernels/test_softmax.cpp's (tests/support/softmax_bound.hpp).

#include <cmath>
#include <cstddef>
#include <limits>

#include "emha/kernels/softmax.hpp"
#include "emha/kernels/softmax_ref.hpp"
#include "runner.hpp"
#include "support/numeric.hpp"
#include "support/softmax_bound.hpp"

namespace fw {
namespace {

using emha::SoftmaxOptions;

constexpr float inf = std::numeric_limits<float>::infinity();
constexpr std::size_t sizes[] = {1, 2, 3, 5, 7, 8, 9, 11, 13, 16, 17, 31, 33, 64, 127};
constexpr std::size_t max_rows = 4, max_ld = 127 + 3;

float g_x[max_rows * max_ld], g_mask[max_rows * max_ld];
float g_y[max_rows * max_ld], g_y_ref[max_rows * max_ld], g_y64[max_rows * max_ld];

void check_softmax(std::size_t rows, std::size_t n, std::size_t pad, const SoftmaxOptions& opt) {
  const std::size_t ld = n + pad;
  for (std::size_t i = 0; i < rows * ld; ++i) g_y[i] = g_y_ref[i] = g_y64[i] = 7.0f;
  emha::softmax_f32(rows, n, g_x, ld, g_y, ld, opt);
  emha::softmax_f32_ref(rows, n, g_x, ld, g_y_ref, ld, opt);
  emha::softmax_f32_ref<double>(rows, n, g_x, ld, g_y64, ld, opt);
  const std::size_t bad =
      emha::test::softmax_bound_violations(rows, n, ld, g_x, opt, g_y, g_y_ref, g_y64, 7.0f);
  if (!check(bad == 0, "softmax_f32 within the float32 bound of softmax_f32_ref"))
    Line() << "  rows=" << rows << " n=" << n << " pad=" << pad << " scale=" << opt.scale
           << " mask=" << int(opt.mask != nullptr) << ": " << bad << " bad elements";
}

}  // namespace

void test_softmax() {
  Suite suite("softmax_f32");
  std::uint64_t seed = 1;
  for (std::size_t n : sizes) {
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

  // A row of all -inf gives zeros (never NaN); the other row is unaffected.
  for (std::size_t n : {std::size_t(1), std::size_t(8), std::size_t(17)}) {
    for (std::size_t j = 0; j < n; ++j) {
      g_x[j] = -inf;
      g_x[n + j] = float(j);
    }
    emha::softmax_f32(2, n, g_x, n, g_y, n);
    std::size_t bad = 0;
    double sum = 0;
    for (std::size_t j = 0; j < n; ++j) {
      bad += g_y[j] != 0.0f;
      sum += g_y[n + j];
    }
    check(bad == 0 && std::fabs(sum - 1.0) <= 1e-6, "a fully masked row gives zeros");
  }

  // A NaN makes its row NaN and no other.
  for (std::size_t n : {std::size_t(1), std::size_t(3), std::size_t(9), std::size_t(33)}) {
    emha::test::fill_uniform(g_x, 2 * n, n);
    g_x[n / 2] = std::nanf("");
    emha::softmax_f32(2, n, g_x, n, g_y, n);
    std::size_t nan0 = 0, nan1 = 0;
    for (std::size_t j = 0; j < n; ++j) {
      nan0 += std::isnan(g_y[j]);
      nan1 += std::isnan(g_y[n + j]);
    }
    check(nan0 == n && nan1 == 0, "a NaN shows up in its row only");
  }

  // In place.
  emha::test::fill_uniform(g_x, 3 * 17, 5);
  emha::softmax_f32_ref<double>(3, 17, g_x, 17, g_y64, 17);
  emha::softmax_f32(3, 17, g_x, 17, g_x, 17);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < 3 * 17; ++i) bad += !(std::fabs(g_x[i] - g_y64[i]) <= 1e-5 * g_y64[i] + 1e-37);
  check(bad == 0, "in place");
}

}  // namespace fw

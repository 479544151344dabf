// SPDX-License-Identifier: Apache-2.0
// gemm_w8a32_rows (few rows of A against an int8 B read in place, a scale per row of B: a
// decode step over an int8 KvCache) against float64 and its reference over every tail of m, n
// and k, both B layouts, a row stride on every operand, alpha, beta and bias. The bound is
// gemm_f32_rows': (k + 3) u times sum |a s b| (+ |bias| + |beta c|); B's values span [-127, 127].

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "emha/kernels/gemm_w8a32.hpp"
#include "emha/kernels/gemm_w8a32_ref.hpp"
#include "kernels/gemm_check.hpp"
#include "support/numeric.hpp"

using emha::GemmOptions;
using emha::Trans;

namespace {

std::vector<std::int8_t> int8_values(std::size_t n, std::uint64_t seed) {
  const auto u = emha::test::uniform(n, seed);
  std::vector<std::int8_t> q(n);
  for (std::size_t i = 0; i < n; ++i) q[i] = static_cast<std::int8_t>(std::lround(u[i] * 127.0f));
  if (n) q[0] = -127;
  if (n > 1) q[n - 1] = 127;
  return q;
}

// Scales as an int8 cache's: amax / 127 of rows of magnitude ~1, positive.
std::vector<float> scales(std::size_t n, std::uint64_t seed) {
  auto s = emha::test::uniform(n, seed);
  for (float& x : s) x = (1.5f + x) / 127.0f;
  return s;
}

// m rows, n = k = s but for variant 1 (n = 9) and 2 (k = 11); 1 and 2 with alpha and beta, 3
// also with a bias.
void check_rows(std::size_t m, std::size_t s, Trans tr, int variant, std::uint64_t& seed) {
  const GemmOptions plain{}, scaled{0.37f, 1.0f, nullptr};
  const std::size_t n = variant == 1 ? 9 : s, k = variant == 2 ? 11 : s, pad = 3;
  const std::size_t lda = k + pad, ldc = n + pad, ldb = (tr == Trans::none ? n : k) + pad;
  const std::size_t b_rows = tr == Trans::none ? k : n;
  const auto a = emha::test::uniform(m * lda, seed++);
  const auto b = int8_values(b_rows * ldb, seed++);
  const auto sc = scales(b_rows, seed++);
  const auto bias = emha::test::uniform(n, seed++);
  const auto c0 = emha::test::uniform(m * ldc, seed++);
  GemmOptions o = variant == 0 ? plain : scaled;
  if (variant >= 2) o.bias = bias.data();
  std::vector<float> c = c0, c_ref = c0, c64 = c0, mag(m * ldc, 0.0f);
  emha::gemm_w8a32_rows(m, n, k, a.data(), lda, b.data(), ldb, sc.data(), tr, c.data(), ldc, o);
  emha::gemm_w8a32_rows_ref(m, n, k, a.data(), lda, b.data(), ldb, sc.data(), tr, c_ref.data(), ldc, o);
  emha::gemm_w8a32_rows_ref<double>(m, n, k, a.data(), lda, b.data(), ldb, sc.data(), tr, c64.data(), ldc, o);
  std::vector<float> abs_a(a.size());
  std::vector<std::int8_t> abs_b(b.size());
  for (std::size_t i = 0; i < a.size(); ++i) abs_a[i] = std::fabs(a[i]);
  for (std::size_t i = 0; i < b.size(); ++i) abs_b[i] = static_cast<std::int8_t>(b[i] < 0 ? -b[i] : b[i]);
  emha::gemm_w8a32_rows_ref<double>(m, n, k, abs_a.data(), lda, abs_b.data(), ldb, sc.data(), tr,
                                    mag.data(), ldc);
  const std::size_t bad = emha::test::rows_out_of_bound(m, n, k, ldc, o, c.data(), c_ref.data(), c64.data(),
                                                        c0.data(), mag.data());
  // Each row alone gives the same bits (a GQA group's rows may be split into parts over threads).
  std::vector<float> c_one = c0;
  for (std::size_t i = 0; i < m; ++i)
    emha::gemm_w8a32_rows(1, n, k, a.data() + i * lda, lda, b.data(), ldb, sc.data(), tr, c_one.data() + i * ldc,
                          ldc, o);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < c.size(); ++i) differ += c_one[i] != c[i];
  INFO("m=" << m << " n=" << n << " k=" << k << " trans=" << int(tr) << " variant=" << variant);
  CHECK(bad == 0);
  CHECK(differ == 0);
}

}  // namespace

TEST_CASE("gemm_w8a32_rows: few rows, int8 B in place with a scale per row, over every tail") {
  std::uint64_t seed = 2600;
  for (std::size_t m : {std::size_t(1), std::size_t(2), std::size_t(3), std::size_t(4), std::size_t(5)})
    for (Trans tr : {Trans::none, Trans::transpose})
      for (int variant = 0; variant < 4; ++variant) {
        for (std::size_t s : emha::test::tail_sizes) check_rows(m, s, tr, variant, seed);
        check_rows(m, 200, tr, variant, seed);  // a head_dim past every tail size
      }
}

// SPDX-License-Identifier: Apache-2.0
// softmax_f32 on the host only: the exp across its argument range (2000 x 16 rows), rows alone and
// in groups, and the online softmax over key blocks, with std::vector buffers. The tail sweep and
// the edge cases both targets run are test_softmax.cpp's.
//
// Tolerance: y_j = e_j / S with e_j = exp(z_j - max). Forming z costs one rounding of |z| (up to
// 2u relative to z with the mask add); exp turns an absolute argument error d into a relative
// error d, so e_j carries ~ (|z_j| + |max|) * 2u plus the exp's own few ulp (simd::vexp:
// <= 4 ulp); the sum of n terms adds n * u and the final scaling 2u. Per element:
//   |y - y64| <= y64 * (2 (|z_j| + |max|) + n + 16) * u + 1e-37.
// On ARM, xsimd 8.1's float division and sqrt are 2 ulp (aarch64) and 3 ulp (armv7) off, inside
// the 16 u of slack; armv7 NEON flushes subnormals to zero, so results below ~1e-38 may come out
// as 0: the 1e-37 absolute term admits exactly that and nothing else.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "emha/kernels/gemm_ref.hpp"
#include "emha/kernels/softmax.hpp"
#include "emha/kernels/softmax_ref.hpp"
#include "support/numeric.hpp"
#include "support/softmax_bound.hpp"

using emha::SoftmaxOptions;

namespace {
constexpr float inf = std::numeric_limits<float>::infinity();
}  // namespace

// The vector exp (simd::vexp on SIMD builds) sees x = z - max: rows [0, z_1 .. z_15] with z_j =
// -(j - 1 + f) * 104 / 15 and f stepping through [0, 1) over 2000 rows put 30,000 arguments
// evenly over [-104, 0], in whole vectors on every build: the polynomial's range, the 2^n scaling
// for every n down to -126, and the underflow below 2^-126. With scale 1, no mask and max 0,
// z - max is exact, so the only errors are the exp's own (<= 4 ulp budgeted), the n-term sum
// (n u) and the division (u); keys 6.9 apart keep each y_j's own exp error visible (a shared
// relative error would cancel in y = e / sum e). Below 2^-126, 0 is accepted (1e-37 absolute).
TEST_CASE("softmax_f32's exp across its argument range, to a few ulp") {
  constexpr std::size_t rows = 2000, n = 16;
  std::vector<float> x(rows * n), y(rows * n), y64(rows * n);
  for (std::size_t i = 0; i < rows; ++i) {
    x[i * n] = 0.0f;
    for (std::size_t j = 1; j < n; ++j)
      x[i * n + j] = -(float(j - 1) + float(i) / float(rows)) * (104.0f / float(n - 1));
  }
  emha::softmax_f32(rows, n, x.data(), n, y.data(), n);
  emha::softmax_f32_ref<double>(rows, n, x.data(), n, y64.data(), n);
  std::size_t bad = 0;
  double worst_ulps = 0.0;
  for (std::size_t k = 0; k < x.size(); ++k) {
    const double err = std::fabs(double(y[k]) - y64[k]);
    if (y64[k] > 1e-37) worst_ulps = std::max(worst_ulps, err / (y64[k] * emha::test::u32));
    bad += !(err <= y64[k] * (4.0 + double(n) + 1.0) * emha::test::u32 + 1e-37);
  }
  INFO("worst relative error in units of 2^-24: " << worst_ulps);
  CHECK(bad == 0);
}

// Rows run in interleaved groups of four on SIMD builds (softmax_f32.cpp); a row's result must not
// depend on its neighbours: the same bits as a call for that row alone, whether its group takes
// the grouped path or (a fully masked row in it) the row-by-row one. n = 3 runs only the scalar
// tails on AVX2, the other lengths the vector loops too. (On the scalar build rows go one at a
// time, and only the float64 checks below can fail.)
TEST_CASE("softmax rows give the same bits alone as in a group") {
  const std::size_t rows = 13, dv = 5;
  for (std::size_t n : {3u, 8u, 17u, 32u, 64u}) {
    auto x = emha::test::uniform(rows * n, 300 + n, -9, 9);
    for (std::size_t j = 0; j < n; ++j) x[5 * n + j] = -inf;  // row 5: every key masked
    x[9 * n + n / 2] = -inf;                                   // row 9: one key masked

    std::vector<float> y(rows * n), y1(rows * n);
    emha::softmax_f32(rows, n, x.data(), n, y.data(), n, SoftmaxOptions{0.7f});
    for (std::size_t i = 0; i < rows; ++i)
      emha::softmax_f32(1, n, x.data() + i * n, n, y1.data() + i * n, n, SoftmaxOptions{0.7f});

    // Online update of a block of keys, per row (|scores| <= 6.3 after the 0.7 scale):
    //   rows 0, 1, 3: running max -20: a new max, so l and o are rescaled (o changes);
    //   row 2: no key seen yet (max -inf, l 0) and finite scores: o must stay untouched;
    //   row 5: every key masked so far and now (its group goes row by row);
    //   rows 8-11: running max 20 above every score: no rescale; rows 4, 6, 7, 12: mixed.
    std::vector<float> s(x.size()), m(rows), l(rows, 2.5f), o(rows * dv, 1.0f);
    for (std::size_t k = 0; k < x.size(); ++k) s[k] = 0.7f * x[k];
    for (std::size_t i = 0; i < rows; ++i) m[i] = i >= 8 && i < 12 ? 20.0f : float(i) - 4.0f;
    m[0] = m[1] = m[3] = -20.0f;
    m[2] = m[5] = -inf;
    l[2] = l[5] = 0.0f;
    std::vector<float> s1 = s, m1 = m, l1 = l, o1 = o;
    emha::softmax_online_update_f32(rows, n, s.data(), n, m.data(), l.data(), o.data(), dv, dv);
    for (std::size_t i = 0; i < rows; ++i)
      emha::softmax_online_update_f32(1, n, s1.data() + i * n, n, &m1[i], &l1[i],
                                      o1.data() + i * dv, dv, dv);
    INFO("n=" << n);
    CHECK(std::memcmp(y.data(), y1.data(), y.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(s.data(), s1.data(), s.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(m.data(), m1.data(), m.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(l.data(), l1.data(), l.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(o.data(), o1.data(), o.size() * sizeof(float)) == 0);
    for (std::size_t q = 0; q < dv; ++q) {
      CHECK(o[2 * dv + q] == 1.0f);   // first keys of row 2: o neither read nor written
      CHECK(o[0 * dv + q] < 1e-5f);   // rows 0 and 3 rescaled by exp(-20 - max) <= 1.1e-6
      CHECK(o[3 * dv + q] < 1e-5f);
      CHECK(o[9 * dv + q] == 1.0f);   // row 9 kept its max: no rescale
    }
    // and the grouped rows are right: softmax against float64, a fully masked row all zeros
    std::vector<float> y64(rows * n);
    emha::softmax_f32_ref<double>(rows, n, x.data(), n, y64.data(), n, SoftmaxOptions{0.7f});
    std::size_t bad = 0;
    for (std::size_t k = 0; k < y.size(); ++k) {
      const double tol = y64[k] * (4 * 0.7 * 9.0 + double(n) + 16) * emha::test::u32 + 1e-37;
      bad += !(std::fabs(y[k] - y64[k]) <= tol);
    }
    CHECK(bad == 0);
  }
}

namespace {

// Streams scores [rows x n] through the online softmax in key blocks of `block` and multiplies
// by V [n x dv]; `ref` picks the reference kernels.
std::vector<float> online_attention(std::size_t rows, std::size_t n, std::size_t dv, std::size_t block,
                                    const std::vector<float>& scores, const std::vector<float>& v, bool ref) {
  // o starts as NaN: the update must not read it before the first block's product stores it.
  std::vector<float> o(rows * dv, std::nanf("")), m(rows, -inf), l(rows, 0.0f), s(rows * block);
  for (std::size_t k0 = 0; k0 < n; k0 += block) {
    const std::size_t bk = std::min(block, n - k0);
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < bk; ++j) s[i * block + j] = scores[i * n + k0 + j];
    if (ref)
      emha::softmax_online_update_f32_ref(rows, bk, s.data(), block, m.data(), l.data(), o.data(), dv, dv);
    else
      emha::softmax_online_update_f32(rows, bk, s.data(), block, m.data(), l.data(), o.data(), dv, dv);
    emha::gemm_f32_ref(rows, dv, bk, s.data(), block, v.data() + k0 * dv, dv, emha::Trans::none,
                       o.data(), dv, emha::GemmOptions{1.0f, k0 == 0 ? 0.0f : 1.0f, nullptr});
  }
  if (ref)
    emha::softmax_online_finish_f32_ref(rows, dv, l.data(), o.data(), dv);
  else
    emha::softmax_online_finish_f32(rows, dv, l.data(), o.data(), dv);
  return o;
}

}  // namespace

// The streamed result equals softmax(scores) * V computed in float64. Each output is a convex
// combination of V rows (|v| <= 1): the softmax bound above (relative, per weight) plus the
// block rescalings (one rounding per block, <= n of them) and the float32 sum of n products:
//   |o - o64| <= (4 * zmax + 3 * n + 16) * u.
TEST_CASE("online softmax over key blocks equals softmax(scores) * V") {
  std::uint64_t seed = 4000;
  // 9 rows = two groups of four and one row alone (softmax_f32.cpp). Rows 0-3 have finite maxima
  // from the first block on, so they take the grouped path on every block; the masked rows sit
  // in the second group, which goes row by row while one of them has seen no key.
  const std::size_t rows = 9, dv = 7;
  for (std::size_t n : emha::test::tail_sizes) {
    auto scores = emha::test::uniform(rows * n, seed++, -10, 10);
    scores[1 * n + n / 2] = -inf;                                    // one masked key in row 1
    for (std::size_t j = 0; j < n; ++j) scores[6 * n + j] = -inf;    // row 6 fully masked
    if (n > 3) for (std::size_t j = 0; j < n / 2; ++j) scores[5 * n + j] = -inf;  // leading masked block
    const auto v = emha::test::uniform(n * dv, seed++);

    std::vector<float> p64(rows * n);
    emha::softmax_f32_ref<double>(rows, n, scores.data(), n, p64.data(), n);
    std::vector<float> o64(rows * dv);
    emha::gemm_f32_ref<double>(rows, dv, n, p64.data(), n, v.data(), dv, emha::Trans::none, o64.data(), dv);

    for (std::size_t block : {std::size_t(1), std::size_t(3), std::size_t(8), std::size_t(17), n}) {
      const auto o = online_attention(rows, n, dv, block, scores, v, false);
      const auto o_ref = online_attention(rows, n, dv, block, scores, v, true);
      const double tol = (4 * 10.0 + 3.0 * double(n) + 16) * emha::test::u32;
      std::size_t bad = 0;
      for (std::size_t i = 0; i < o.size(); ++i) {
        bad += !(std::fabs(o[i] - o64[i]) <= tol);
        bad += !(std::fabs(o_ref[i] - o64[i]) <= tol);
      }
      for (std::size_t q = 0; q < dv; ++q) bad += o[6 * dv + q] != 0.0f;  // fully masked row: zeros
      INFO("n=" << n << " block=" << block);
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("online softmax keeps a NaN visible") {
  // 9 rows: row 1 has a NaN among finite scores (its group of four takes the grouped path), row 6
  // a NaN among -inf (its group goes row by row); those rows come out NaN, the others finite.
  const std::size_t rows = 9, n = 9, dv = 3;
  auto scores = emha::test::uniform(rows * n, 4100);
  scores[1 * n + 4] = std::nanf("");
  for (std::size_t j = 0; j < n; ++j) scores[6 * n + j] = j == 2 ? std::nanf("") : -inf;
  const auto v = emha::test::uniform(n * dv, 4101);
  for (bool ref : {false, true}) {
    for (std::size_t block : {std::size_t(2), n}) {
      const auto o = online_attention(rows, n, dv, block, scores, v, ref);
      std::size_t wrong = 0;
      for (std::size_t k = 0; k < o.size(); ++k) {
        const std::size_t row = k / dv;
        wrong += (row == 1 || row == 6) ? !std::isnan(o[k]) : !std::isfinite(o[k]);
      }
      INFO("ref=" << ref << " block=" << block);
      CHECK(wrong == 0);
    }
  }
}

// The finish divides: each output is the correctly rounded o / l (float division, the float of
// the float64 quotient), one rounding where o * (1 / l) takes two. On armv7 NEON this catches
// xsimd's reciprocal-estimate division, which is not exact. Every tail of the vector loop, and a
// row whose sum is 0 (fully masked) becomes zeros.
TEST_CASE("online softmax finish is the exact quotient o / l") {
  std::uint64_t seed = 4200;
  const std::size_t rows = 5;
  for (std::size_t dv : emha::test::tail_sizes) {
    auto o = emha::test::uniform(rows * dv, seed++, -4, 4);
    auto l = emha::test::uniform(rows, seed++, 1, 9);
    l[3] = 0.0f;
    std::vector<float> want(o.size());
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t q = 0; q < dv; ++q)
        want[i * dv + q] = l[i] == 0.0f ? 0.0f : float(double(o[i * dv + q]) / double(l[i]));
    emha::softmax_online_finish_f32(rows, dv, l.data(), o.data(), dv);
    std::size_t differ = 0;
    for (std::size_t k = 0; k < o.size(); ++k) differ += o[k] != want[k];
    INFO("dv=" << dv);
    CHECK(differ == 0);
  }
}

// SPDX-License-Identifier: Apache-2.0
// gemm_f32 against gemm_f32_ref (float, another summation order) and gemm_f32_ref<double>, over
// tails of every micro-kernel tile, both B layouts, padded leading dimensions, alpha/beta/bias,
// and K and M beyond one packed block. The bound is tests/kernels/test_gemm.cpp's (Higham):
//   |c - c_exact| <= (k + 3) * u * (|alpha| sum_p |a_p b_p| + |bias_j| + |beta c_j|),
// and twice that against the float reference.

#include <cmath>
#include <cstddef>

#include "emha/kernels/gemm.hpp"
#include "emha/kernels/gemm_ref.hpp"
#include "runner.hpp"
#include "support/numeric.hpp"

namespace fw {
namespace {

using emha::GemmOptions;
using emha::Trans;

struct GemmCase {
  std::size_t m, n, k;
  Trans trans = Trans::none;
  std::size_t pad = 0;  // extra columns in every leading dimension
  float alpha = 1.0f, beta = 0.0f;
  bool with_bias = false;
};

constexpr std::size_t sizes[] = {1, 2, 3, 5, 7, 8, 9, 11, 13, 16, 17, 31, 33};
constexpr GemmCase special[] = {
    {5, 7, emha::gemm_kc + 44, Trans::none, 0, 1.0f, 0.5f, true},  // two blocks of K
    {5, 9, emha::gemm_kc + 34, Trans::transpose, 2, 0.7f, 0.0f, true},
    {100, 9, 5, Trans::none, 0},                            // M > gemm_mc
    {100, 9, 5, Trans::transpose, 1},
    {7, 19, 23, Trans::none, 3, 0.5f, 0.0f, true},          // alpha, bias, padding
    {9, 19, 23, Trans::transpose, 3, 1.0f, -1.5f, false},   // beta
    {23, 17, 11, Trans::transpose, 1, -2.0f, 0.25f, true},
    {32, 96, 32, Trans::transpose, 0, 1.0f, 0.0f, true},    // x W^T + b
    {16, 24, 8, Trans::transpose, 24},                      // Q_h K_h^T, ld = d_model
    {16, 8, 24, Trans::none, 24},                           // P V_h
};

// Every case run: the square sweep, three one-dimension sweeps, the special cases.
template <class F>
constexpr void for_each_case(F&& f) {
  for (std::size_t s : sizes) {
    for (Trans t : {Trans::none, Trans::transpose}) {
      f(GemmCase{s, s, s, t});
      f(GemmCase{s, 17, 9, t});
      f(GemmCase{13, s, 31, t});
      f(GemmCase{7, 33, s, t});
    }
  }
  for (const GemmCase& c : special) f(c);
}

constexpr std::size_t lda(const GemmCase& c) { return c.k + c.pad; }
constexpr std::size_t ldb(const GemmCase& c) { return (c.trans == Trans::none ? c.n : c.k) + c.pad; }
constexpr std::size_t ldc(const GemmCase& c) { return c.n + c.pad; }
constexpr std::size_t b_rows(const GemmCase& c) { return c.trans == Trans::none ? c.k : c.n; }

struct Capacity {
  std::size_t a = 0, b = 0, c = 0, n = 0, scratch = 0;
};
constexpr Capacity capacity() {
  Capacity cap;
  for_each_case([&cap](const GemmCase& c) {
    cap.a = cap.a < c.m * lda(c) ? c.m * lda(c) : cap.a;
    cap.b = cap.b < b_rows(c) * ldb(c) ? b_rows(c) * ldb(c) : cap.b;
    cap.c = cap.c < c.m * ldc(c) ? c.m * ldc(c) : cap.c;
    cap.n = cap.n < c.n ? c.n : cap.n;
    const std::size_t s = emha::gemm_f32_scratch_bytes(c.m, c.n, c.k);
    cap.scratch = cap.scratch < s ? s : cap.scratch;
  });
  return cap;
}
constexpr Capacity cap = capacity();

float g_a[cap.a], g_b[cap.b], g_bias[cap.n], g_c0[cap.c], g_c[cap.c], g_c_ref[cap.c], g_c64[cap.c];
emha::StaticArena<cap.scratch> g_scratch;

void check_gemm(const GemmCase& t, std::uint64_t seed) {
  emha::test::fill_uniform(g_a, t.m * lda(t), seed);
  emha::test::fill_uniform(g_b, b_rows(t) * ldb(t), seed + 1);
  emha::test::fill_uniform(g_bias, t.n, seed + 2);
  emha::test::fill_uniform(g_c0, t.m * ldc(t), seed + 3);
  const std::size_t nc = t.m * ldc(t);
  for (std::size_t i = 0; i < nc; ++i) g_c[i] = g_c_ref[i] = g_c64[i] = g_c0[i];
  GemmOptions opt{t.alpha, t.beta, t.with_bias ? g_bias : nullptr};

  const emha::Status s = emha::gemm_f32(t.m, t.n, t.k, g_a, lda(t), g_b, ldb(t), t.trans, g_c, ldc(t), g_scratch, opt);
  emha::gemm_f32_ref(t.m, t.n, t.k, g_a, lda(t), g_b, ldb(t), t.trans, g_c_ref, ldc(t), opt);
  emha::gemm_f32_ref<double>(t.m, t.n, t.k, g_a, lda(t), g_b, ldb(t), t.trans, g_c64, ldc(t), opt);

  std::size_t bad = 0;
  for (std::size_t i = 0; i < t.m; ++i) {
    for (std::size_t j = 0; j < ldc(t); ++j) {
      const std::size_t idx = i * ldc(t) + j;
      if (j >= t.n) {  // padding between rows: never written
        bad += g_c[idx] != g_c0[idx];
        continue;
      }
      double mag = 0;
      for (std::size_t p = 0; p < t.k; ++p) {
        const float bv = t.trans == Trans::none ? g_b[p * ldb(t) + j] : g_b[j * ldb(t) + p];
        mag += std::fabs(double(g_a[i * lda(t) + p]) * double(bv));
      }
      const double scale = std::fabs(opt.alpha) * mag + (opt.bias ? std::fabs(opt.bias[j]) : 0.0) +
                           std::fabs(double(opt.beta) * g_c0[idx]);
      const double bound = double(t.k + 3) * emha::test::u32 * scale;
      bad += !(std::fabs(double(g_c[idx]) - double(g_c64[idx])) <= bound);
      bad += !(std::fabs(double(g_c[idx]) - double(g_c_ref[idx])) <= 2 * bound);
    }
  }
  const bool ok = s == emha::Status::ok && bad == 0 && g_scratch.used() == 0;
  if (!check(ok, "gemm_f32 within the float32 bound of gemm_f32_ref, scratch released"))
    Line() << "  m=" << t.m << " n=" << t.n << " k=" << t.k << " trans=" << int(t.trans) << " pad=" << t.pad
           << " alpha=" << t.alpha << " beta=" << t.beta << " bias=" << int(t.with_bias) << ": status "
           << int(s) << ", " << bad << " bad elements";
}

}  // namespace

void test_gemm() {
  Suite suite("gemm_f32");
  std::uint64_t seed = 1;
  for_each_case([&seed](const GemmCase& c) { check_gemm(c, seed++); });

  // beta == 0 never reads C (NaN there is harmless).
  for (std::size_t i = 0; i < 5 * 9; ++i) g_c[i] = std::nanf("");
  emha::test::fill_uniform(g_a, 5 * 4, 7);
  emha::test::fill_uniform(g_b, 4 * 9, 8);
  emha::gemm_f32(5, 9, 4, g_a, 4, g_b, 9, Trans::none, g_c, 9, g_scratch);
  emha::gemm_f32_ref(5, 9, 4, g_a, 4, g_b, 9, Trans::none, g_c_ref, 9);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < 5 * 9; ++i) bad += !(std::fabs(g_c[i] - g_c_ref[i]) <= 1e-5f * (1 + std::fabs(g_c_ref[i])));
  check(bad == 0, "beta == 0 never reads C");

  // Too little scratch: no_space, C untouched.
  for (std::size_t i = 0; i < 33 * 33; ++i) g_c[i] = 42.0f;
  emha::StaticArena<256> tiny;
  const emha::Status s = emha::gemm_f32(33, 33, 33, g_a, 33, g_b, 33, Trans::none, g_c, 33, tiny);
  bad = 0;
  for (std::size_t i = 0; i < 33 * 33; ++i) bad += g_c[i] != 42.0f;
  check(s == emha::Status::no_space && bad == 0 && tiny.used() == 0, "no_space leaves C and the arena untouched");
}

}  // namespace fw

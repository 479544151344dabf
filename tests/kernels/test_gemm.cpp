// SPDX-License-Identifier: Apache-2.0
// gemm_f32 against gemm_f32_ref and gemm_f32_ref<double> (gemm_check.hpp: the bound and why), on
// the host and the firmware: over tails of every micro-kernel tile, both B layouts, padded
// leading dimensions, alpha/beta/bias, K and M beyond one packed block; beta == 0, k == 0, the
// errors, and the scratch size's monotonicity. Static buffers sized at compile time for the cases
// of the target. The host's larger cases are test_gemm_host.cpp's.

#include <cmath>
#include <cstddef>

#include "emha/kernels/gemm.hpp"
#include "emha/kernels/gemm_ref.hpp"
#include "kernels/gemm_check.hpp"
#include "support/numeric.hpp"
#include "support/unit.hpp"

namespace {

using emha::GemmOptions;
using emha::Status;
using emha::Trans;
using emha::test::GemmCase;

// Square and one-dimension sweeps: every tail size on the host; on the firmware those up to 33,
// which the boards' RAM holds beside the attention suites' buffers (512 KiB on the M55 board).
#ifdef EMHA_TEST_FIRMWARE
constexpr std::size_t sizes[] = {1, 2, 3, 5, 7, 8, 9, 11, 13, 16, 17, 31, 33};
#else
constexpr const auto& sizes = emha::test::tail_sizes;
#endif

constexpr GemmCase special[] = {
    {5, 7, emha::gemm_kc + 44, Trans::none, 0, GemmOptions{1.0f, 0.5f, nullptr}, true},  // two blocks of K
    {5, 9, emha::gemm_kc + 34, Trans::transpose, 2, GemmOptions{0.7f, 0.0f, nullptr}, true},
    {100, 9, 5, Trans::none, 0},                                                    // M > gemm_mc
    {100, 9, 5, Trans::transpose, 1},
    {7, 19, 23, Trans::none, 3, GemmOptions{0.5f, 0.0f, nullptr}, true},            // alpha, bias, padding
    {9, 19, 23, Trans::transpose, 3, GemmOptions{1.0f, -1.5f, nullptr}, false},     // beta
    {23, 17, 11, Trans::transpose, 1, GemmOptions{-2.0f, 0.25f, nullptr}, true},
    {32, 96, 32, Trans::transpose, 0, GemmOptions{}, true},                         // x W^T + b
    {16, 24, 8, Trans::transpose, 24},                                              // Q_h K_h^T, ld = d_model
    {16, 8, 24, Trans::none, 24},                                                   // P V_h
};

// The square sweep (f(case, 0)), the three one-dimension sweeps (1), the special cases (2).
template <class F>
constexpr void for_each_case(F&& f) {
  for (std::size_t s : sizes) {
    for (Trans t : {Trans::none, Trans::transpose}) {
      f(GemmCase{s, s, s, t}, 0);
      f(GemmCase{s, 17, 9, t}, 1);
      f(GemmCase{13, s, 31, t}, 1);
      f(GemmCase{7, 33, s, t}, 1);
    }
  }
  for (const GemmCase& c : special) f(c, 2);
}

struct Capacity {
  std::size_t a = 0, b = 0, c = 0, n = 0, arena = 0;
};
constexpr std::size_t larger(std::size_t x, std::size_t y) { return x > y ? x : y; }
constexpr Capacity capacity() {
  Capacity cap;
  for_each_case([&cap](const GemmCase& c, int) {
    cap.a = larger(cap.a, c.m * emha::test::gemm_lda(c));
    cap.b = larger(cap.b, emha::test::gemm_b_rows(c) * emha::test::gemm_ldb(c));
    cap.c = larger(cap.c, larger(c.m * emha::test::gemm_ldc(c), 33 * 33));  // 33 x 33: the error test
    cap.n = larger(cap.n, c.n);
    cap.arena = larger(cap.arena, emha::test::gemm_check_arena_bytes(c));
  });
  cap.a = larger(cap.a, 33 * 33);
  cap.b = larger(cap.b, 33 * 33);
  return cap;
}
constexpr Capacity cap = capacity();

float g_a[cap.a], g_b[cap.b], g_bias[cap.n], g_c0[cap.c], g_c[cap.c], g_c_ref[cap.c], g_c64[cap.c];
emha::StaticArena<cap.arena> g_scratch;

void check_gemm(const GemmCase& t, std::uint64_t seed) {
  emha::test::check_gemm(t, seed, {g_a, g_b, g_bias, g_c0, g_c, g_c_ref, g_c64, &g_scratch});
}

void run_sweep(int which, std::uint64_t seed) {
  for_each_case([&](const GemmCase& c, int sweep) {
    if (sweep == which) check_gemm(c, seed++);
  });
}

}  // namespace

EMHA_TEST_CASE("gemm_f32: square sizes over every tail, both B layouts") { run_sweep(0, 1); }

EMHA_TEST_CASE("gemm_f32: one dimension swept while the others stay at odd sizes") { run_sweep(1, 100); }

EMHA_TEST_CASE("gemm_f32: two blocks of K, M past gemm_mc, padding, alpha, beta, bias, attention shapes") {
  run_sweep(2, 700);
}

EMHA_TEST_CASE("gemm_f32: beta == 0 never reads C") {
  constexpr std::size_t m = 5, n = 9, k = 4;
  for (std::size_t i = 0; i < m * n; ++i) g_c[i] = std::nanf("");
  emha::test::fill_uniform(g_a, m * k, 7);
  emha::test::fill_uniform(g_b, k * n, 8);
  EMHA_CHECK(emha::gemm_f32(m, n, k, g_a, k, g_b, n, Trans::none, g_c, n, g_scratch) == Status::ok);
  emha::gemm_f32_ref(m, n, k, g_a, k, g_b, n, Trans::none, g_c_ref, n);
  for (std::size_t i = 0; i < m * n; ++i) EMHA_CHECK(std::fabs(g_c[i] - g_c_ref[i]) <= 1e-5f * (1 + std::fabs(g_c_ref[i])));
}

EMHA_TEST_CASE("gemm_f32: k == 0 gives bias + beta * C; empty m or n is a no-op") {
  float c[6] = {1, 2, 3, 4, 5, 6};
  const float bias[3] = {10, 20, 30};
  EMHA_CHECK(emha::gemm_f32(2, 3, 0, nullptr, 0, nullptr, 3, Trans::none, c, 3, g_scratch,
                            GemmOptions{1.0f, 2.0f, bias}) == Status::ok);
  const float want[6] = {12, 24, 36, 18, 30, 42};
  for (int i = 0; i < 6; ++i) EMHA_CHECK(c[i] == want[i]);
  EMHA_CHECK(emha::gemm_f32(0, 3, 4, nullptr, 4, nullptr, 3, Trans::none, nullptr, 3, g_scratch) == Status::ok);
}

// 33 x 33 x 33 needs more than 256 bytes of scratch on every build.
EMHA_TEST_CASE("gemm_f32: errors leave C and the arena untouched") {
  constexpr std::size_t s = 33;
  emha::test::fill_uniform(g_a, s * s, 1);
  emha::test::fill_uniform(g_b, s * s, 2);
  for (std::size_t i = 0; i < s * s; ++i) g_c[i] = 42.0f;
  emha::StaticArena<256> tiny;
  EMHA_CHECK(emha::gemm_f32(s, s, s, g_a, s, g_b, s, Trans::none, g_c, s, tiny) == Status::no_space);
  EMHA_CHECK(emha::gemm_f32(4, 4, 4, nullptr, 4, g_b, 4, Trans::none, g_c, 4, g_scratch) == Status::null_pointer);
  std::size_t changed = 0;
  for (std::size_t i = 0; i < s * s; ++i) changed += g_c[i] != 42.0f;
  EMHA_CHECK(changed == 0);
  EMHA_CHECK(tiny.used() == 0);
}

EMHA_TEST_CASE("gemm_f32_scratch_bytes is nondecreasing in m, n and k") {
  // Callers size one buffer for their largest call (the MHA arena: the projections' largest
  // input width) and make smaller calls from it.
  std::size_t bad = 0;
  for (std::size_t m : {1u, 71u, 72u, 73u, 200u, 600u})
    for (std::size_t n : {1u, 31u, 129u, 192u, 1100u})
      for (std::size_t k = 1; k < 700; ++k) {
        const std::size_t s = emha::gemm_f32_scratch_bytes(m, n, k);
        bad += emha::gemm_f32_scratch_bytes(m, n, k + 1) < s;
        bad += emha::gemm_f32_scratch_bytes(m + 1, n, k) < s;
        bad += emha::gemm_f32_scratch_bytes(m, n + 1, k) < s;
      }
  EMHA_CHECK(bad == 0);
}

// SPDX-License-Identifier: Apache-2.0
// gemm_w8a32 against gemm_w8a32_ref and float64 (gemm_w8a32_check.hpp: the bound), and
// gemm_w8a32_prepacked bit for bit as it, on the host and the firmware: every m of a decode step
// and past one tile (1..9), tails of n and k, padded leading dimensions, alpha/beta/bias/k_blocks,
// weights -127 and 127, scales from 2^-20 to 2^12; k == 0, the errors. Static buffers sized at
// compile time for the target's cases; the host's larger ones are test_gemm_w8a32_host.cpp's.

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "emha/kernels/gemm_w8a32.hpp"
#include "kernels/gemm_w8a32_check.hpp"
#include "support/numeric.hpp"
#include "support/unit.hpp"

namespace {

using emha::GemmOptions;
using emha::Status;
using emha::test::W8Case;

// The firmware's RAM is nearly full with the attention suites' buffers: its sweeps stop at 17,
// and m > gemm_mc is the host's.
#ifdef EMHA_TEST_FIRMWARE
constexpr std::size_t sizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17};
#else
constexpr const auto& sizes = emha::test::tail_sizes;
#endif

constexpr W8Case special[] = {
    {1, 19, 23, 3, GemmOptions{0.5f, 0.0f, nullptr}, true},          // a decode row: alpha, bias, padding
    {2, 19, 23, 1, GemmOptions{1.0f, -1.5f, nullptr}, true},         // beta
    {4, 17, 40, 0, GemmOptions{1.0f, 0.0f, nullptr, true}, false},   // k_blocks
    {1, 40, 37, 2, GemmOptions{-2.0f, 0.25f, nullptr, true}, true},  // k_blocks, everything
    {9, 33, 50, 1, GemmOptions{0.7f, 0.5f, nullptr, true}, true},
#ifndef EMHA_TEST_FIRMWARE  // (RAM: C is 1000 floats)
    {100, 9, 5, 0, GemmOptions{}, false},                            // m > gemm_mc
    {100, 9, 5, 1, GemmOptions{1.0f, 1.0f, nullptr}, true},
#endif
};

// m over a decode step and past one tile, the square sweep, n and k tails (f(case)).
template <class F>
constexpr void for_each_case(F&& f) {
  for (std::size_t m = 1; m <= 9; ++m) f(W8Case{m, 17, 33});
  for (std::size_t s : sizes) {
    f(W8Case{s, s, s});
    f(W8Case{3, s, 19});
    f(W8Case{5, 13, s});
  }
  for (const W8Case& c : special) f(c);
}

struct Capacity {
  std::size_t a = 0, w = 0, c = 0, n = 0, arena = 0;
};
constexpr std::size_t larger(std::size_t x, std::size_t y) { return x > y ? x : y; }
constexpr Capacity capacity() {
  Capacity cap;
  for_each_case([&cap](const W8Case& c) {
    cap.a = larger(cap.a, c.m * emha::test::w8_lda(c));
    cap.w = larger(cap.w, c.n * emha::test::w8_lda(c));
    cap.c = larger(cap.c, c.m * emha::test::w8_ldc(c));
    cap.n = larger(cap.n, c.n);
    cap.arena = larger(cap.arena, emha::test::w8_check_arena_bytes(c));
  });
  return cap;
}
constexpr Capacity cap = capacity();

float g_a[cap.a], g_scale[cap.n], g_bias[cap.n], g_c0[cap.c], g_c[cap.c], g_c_ref[cap.c], g_c64[cap.c];
std::int8_t g_w[cap.w];
emha::StaticArena<cap.arena> g_scratch;

}  // namespace

EMHA_TEST_CASE("gemm_w8a32: m 1..9, square and one-dimension sweeps, alpha/beta/bias/k_blocks; prepacked same bits") {
  std::uint64_t seed = 1;
  for_each_case([&](const W8Case& c) {
    emha::test::check_w8a32(c, seed++, {g_a, g_w, g_scale, g_bias, g_c0, g_c, g_c_ref, g_c64, &g_scratch});
  });
}

EMHA_TEST_CASE("gemm_w8a32: k == 0 gives bias + beta * C; errors leave C untouched") {
  float c[6] = {1, 2, 3, 4, 5, 6};
  const float bias[3] = {10, 20, 30};
  EMHA_CHECK(emha::gemm_w8a32(2, 3, 0, nullptr, 0, nullptr, 0, nullptr, c, 3, g_scratch,
                              GemmOptions{1.0f, 2.0f, bias}) == Status::ok);
  const float want[6] = {12, 24, 36, 18, 30, 42};
  for (int i = 0; i < 6; ++i) EMHA_CHECK(c[i] == want[i]);
  EMHA_CHECK(emha::gemm_w8a32(4, 4, 4, g_a, 4, g_w, 4, nullptr, c, 4, g_scratch) == Status::null_pointer);
  alignas(64) std::int8_t packed[emha::gemm_w8a32_packed_b_bytes(4, 4)];
  const float scale[4] = {1, 1, 1, 1};
  EMHA_CHECK(emha::gemm_w8a32_pack_b(4, 4, g_w, 4, scale, packed, emha::gemm_w8a32_packed_scale_bytes(4) + 15) == Status::size_mismatch);
  EMHA_CHECK(emha::gemm_w8a32_pack_b(4, 4, g_w, 4, scale, packed + 1, sizeof packed - 1) == Status::misaligned);
  EMHA_CHECK(emha::gemm_w8a32_pack_b(4, 4, g_w, 4, scale, packed, sizeof packed) == Status::ok);
  for (int i = 0; i < 6; ++i) c[i] = 42.0f;
  EMHA_CHECK(emha::gemm_w8a32_prepacked(1, 4, 4, g_a, 4, packed, 70, c, 4) == Status::size_mismatch);
  EMHA_CHECK(emha::gemm_w8a32_prepacked(1, 4, 4, g_a, 4, packed + 2, sizeof packed - 2, c, 4) == Status::misaligned);
  std::size_t changed = 0;
  for (int i = 0; i < 6; ++i) changed += c[i] != 42.0f;
  EMHA_CHECK(changed == 0);
  emha::StaticArena<256> tiny;  // under one panel of 64 floats of k on every build (NR >= 4)
  EMHA_CHECK(emha::gemm_w8a32(1, 4, 64, g_a, 64, g_w, 64, scale, c, 4, tiny) == Status::no_space);
  EMHA_CHECK(changed == 0);
  EMHA_CHECK(tiny.used() == 0);
}

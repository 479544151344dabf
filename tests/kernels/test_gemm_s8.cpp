// SPDX-License-Identifier: Apache-2.0
// gemm_s8 (emha/kernels/gemm_s8.hpp) on the host and the firmware: m 1-6 (blocks of 1, 2 and 4
// rows of a and leftover rows), n 1-9 (the four-row blocks of b and each count of leftover rows),
// k 0-67 and 74-130 every 7th (every tail of every variant's step: 64 with AVX-512 VNNI, whose
// tail is a masked load; up to two of its steps and 2), padded strides. Each sum against an int64 loop written here, and against
// gemm_s8_ref; operands of -128 throughout (two int8 products overflow int16: the paths that widen
// pairwise must not saturate), and nothing written past n. gemm_s8_staged likewise for m 1-13
// (two blocks of its staged rows and every leftover), with a stage of exactly gemm_s8_stage_len(k),
// one int16 short of it (gemm_s8's path), starting 4-byte aligned or not, or none; nothing
// written past the stage. gemm_s8 over long rows (k 144-300). row_sums_s8 over every tail and
// offset.

#include <cstddef>
#include <cstdint>

#include "emha/kernels/gemm_s8.hpp"
#include "emha/kernels/gemm_s8_ref.hpp"
#include "support/numeric.hpp"
#include "support/unit.hpp"

namespace {

constexpr std::size_t max_m = 6, max_n = 9, max_k = 130, pad = 5, lda = max_k + pad, ldc = max_n + pad;
std::int8_t g_a[max_m * lda], g_b[max_n * lda];
std::int32_t g_c[max_m * ldc], g_c_ref[max_m * ldc];

// -128 everywhere (every product 16384) or the seeded values in [-127, 127].
void fill(std::int8_t* x, std::size_t count, std::uint64_t seed, bool extreme) {
  if (extreme)
    for (std::size_t i = 0; i < count; ++i) x[i] = INT8_MIN;
  else
    emha::test::fill_int8(x, count, seed);
}

// Adds to bad the sums of c (m x n, rows ldc apart) that differ from an int64 loop over a and b
// (k each, rows a_ld and b_ld apart), and to written the entries of c's rows past n that are no longer -5.
void tally(std::size_t m, std::size_t n, std::size_t k, const std::int8_t* a, std::size_t a_ld, const std::int8_t* b,
           std::size_t b_ld, const std::int32_t* c, std::size_t& bad, std::size_t& written) {
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      std::int64_t want = 0;
      for (std::size_t p = 0; p < k; ++p) want += std::int64_t(a[i * a_ld + p]) * b[j * b_ld + p];
      bad += c[i * ldc + j] != want;
    }
    for (std::size_t j = n; j < ldc; ++j) written += c[i * ldc + j] != -5;
  }
}

}  // namespace

EMHA_TEST_CASE("gemm_s8 over every tail gives exact int32 sums") {
  std::size_t bad = 0, bad_ref = 0, written = 0, cases = 0;
  for (int extreme = 0; extreme < 2; ++extreme)
    for (std::size_t m = 1; m <= max_m; ++m)
      for (std::size_t n = 1; n <= max_n; ++n)
        for (std::size_t k = 0; k <= max_k; k += (extreme ? 5 : k < 67 ? 1 : 7)) {
          fill(g_a, sizeof g_a, 7 * k + m, extreme);
          fill(g_b, sizeof g_b, 11 * k + n + 1000, extreme);
          for (std::size_t i = 0; i < max_m * ldc; ++i) g_c[i] = g_c_ref[i] = -5;
          emha::gemm_s8(m, n, k, g_a, lda, g_b, lda, g_c, ldc);
          emha::gemm_s8_ref(m, n, k, g_a, lda, g_b, lda, g_c_ref, ldc);
          tally(m, n, k, g_a, lda, g_b, lda, g_c, bad, written);
          tally(m, n, k, g_a, lda, g_b, lda, g_c_ref, bad_ref, written);
          ++cases;
        }
  EMHA_CHECK(cases > 5000);
  EMHA_CHECK(bad == 0);
  EMHA_CHECK(bad_ref == 0);
  EMHA_CHECK(written == 0);
}

// Long rows: k 144-300, which Helium's 2 x 4 blocks enter at each of their unrolled steps (9 to
// 16 steps of 16) and leave to its 2 x 3 blocks past 16 steps, with and without k's tail; m 1-3,
// n 1-9, as above.
namespace {
constexpr std::size_t long_k = 300, long_ld = long_k + pad;
std::int8_t g_la[3 * long_ld], g_lb[max_n * long_ld];
}  // namespace

EMHA_TEST_CASE("gemm_s8 over long rows gives exact int32 sums") {
  constexpr std::size_t ks[] = {144, 160, 176, 192, 208, 224, 240, 255, 256, 257, 271, 272, 273, long_k};
  std::size_t bad = 0, written = 0, cases = 0;
  for (int extreme = 0; extreme < 2; ++extreme)
    for (std::size_t m = 1; m <= 3; ++m)
      for (std::size_t n = 1; n <= max_n; ++n)
        for (std::size_t k : ks) {
          fill(g_la, sizeof g_la, 3 * k + m, extreme);
          fill(g_lb, sizeof g_lb, 5 * k + n + 3000, extreme);
          for (std::size_t i = 0; i < max_m * ldc; ++i) g_c[i] = -5;
          emha::gemm_s8(m, n, k, g_la, long_ld, g_lb, long_ld, g_c, ldc);
          tally(m, n, k, g_la, long_ld, g_lb, long_ld, g_c, bad, written);
          ++cases;
        }
  EMHA_CHECK(cases == 2 * 3 * max_n * (sizeof ks / sizeof ks[0]));
  EMHA_CHECK(bad == 0);
  EMHA_CHECK(written == 0);
}

namespace {
constexpr std::size_t staged_m = 13, stage_cap = emha::gemm_s8_stage_len(max_k) + 8;
std::int8_t g_sa[staged_m * lda];
std::int32_t g_sc[staged_m * ldc];
std::int16_t g_stage[stage_cap];
}  // namespace

EMHA_TEST_CASE("gemm_s8_staged over every tail and stage gives exact int32 sums") {
  std::size_t bad = 0, written = 0, stage_over = 0, cases = 0;
  for (int extreme = 0; extreme < 2; ++extreme)
    for (std::size_t m = 1; m <= staged_m; m += (extreme ? 4 : 1))
      for (std::size_t n = 1; n <= max_n; n += (m % 3 == 0 ? 1 : 4))
        for (std::size_t k = 0; k <= max_k; k += (extreme ? 9 : k < 67 ? 1 : 7))
          for (int stage_case = 0; stage_case < 4; ++stage_case) {
            fill(g_sa, sizeof g_sa, 5 * k + m + 31 * stage_case, extreme);
            fill(g_b, sizeof g_b, 13 * k + n + 2000, extreme);
            for (std::size_t i = 0; i < staged_m * ldc; ++i) g_sc[i] = -5;
            for (std::size_t i = 0; i < stage_cap; ++i) g_stage[i] = 777;
            // exact and aligned, exact from an odd int16 (2 mod 4 bytes), one short, none
            const std::size_t offset = stage_case == 1 ? 1 : 0;
            std::size_t len = emha::gemm_s8_stage_len(k) - (stage_case == 2 ? 1 : 0);
            std::int16_t* stage = stage_case == 3 ? nullptr : g_stage + offset;
            if (stage_case == 3) len = 0;
            emha::gemm_s8_staged(m, n, k, g_sa, lda, g_b, lda, g_sc, ldc, stage, len);
            tally(m, n, k, g_sa, lda, g_b, lda, g_sc, bad, written);
            for (std::size_t i = 0; i < stage_cap; ++i)
              stage_over += (i < offset || i >= offset + len) && g_stage[i] != 777;
            ++cases;
          }
  EMHA_CHECK(cases > 3000);
  EMHA_CHECK(bad == 0);
  EMHA_CHECK(written == 0);
  EMHA_CHECK(stage_over == 0);
}

// row_sums_s8 over m 1-6, k 0-130 (every tail of a 16-byte vector and of a 4-byte word), from
// every offset 0-3 (unaligned words), operands of -128 and 127 throughout or seeded: each sum
// against an int64 loop and row_sums_s8_ref, nothing written past m.
EMHA_TEST_CASE("row_sums_s8 over every tail and offset gives exact int32 sums") {
  std::size_t bad = 0, bad_ref = 0, written = 0, cases = 0;
  std::int32_t sums[max_m + 2], sums_ref[max_m];
  for (int fill_case = 0; fill_case < 3; ++fill_case)
    for (std::size_t m = 1; m <= max_m; ++m)
      for (std::size_t k = 0; k <= max_k - 3; k += (k < 67 ? 1 : 7))
        for (std::size_t offset = 0; offset < 4; offset += (fill_case == 0 ? 1 : 3)) {
          if (fill_case == 2)
            for (std::size_t i = 0; i < sizeof g_a; ++i) g_a[i] = INT8_MAX;
          else
            fill(g_a, sizeof g_a, 7 * k + m + offset, fill_case == 1);
          for (std::int32_t& s : sums) s = -5;
          const std::int8_t* a = g_a + offset;
          emha::row_sums_s8(m, k, a, lda, sums);
          emha::row_sums_s8_ref(m, k, a, lda, sums_ref);
          for (std::size_t i = 0; i < m; ++i) {
            std::int64_t want = 0;
            for (std::size_t p = 0; p < k; ++p) want += a[i * lda + p];
            bad += sums[i] != want;
            bad_ref += sums_ref[i] != want;
          }
          for (std::size_t i = m; i < max_m + 2; ++i) written += sums[i] != -5;
          ++cases;
        }
  EMHA_CHECK(cases > 1000);
  EMHA_CHECK(bad == 0);
  EMHA_CHECK(bad_ref == 0);
  EMHA_CHECK(written == 0);
}

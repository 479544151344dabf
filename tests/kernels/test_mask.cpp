// SPDX-License-Identifier: Apache-2.0
// Mask kernels against their scalar references, bit for bit (masking writes -inf or adds one
// float), on the host and the firmware: every tail length, query offsets of both signs, windows,
// valid lengths, key flags, ALiBi distances, boolean and additive masks with broadcast rows; and
// the causal definition with a query offset; soft-capping against float64. Static buffers. The other definitions and
// mask_attend_f32 are test_mask_host.cpp's.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "emha/kernels/mask.hpp"
#include "emha/kernels/mask_ref.hpp"
#include "support/numeric.hpp"
#include "support/unit.hpp"

namespace {

constexpr std::size_t max_rows = 7, max_cols = 127 + 2;

float g_s0[max_rows * max_cols], g_s[max_rows * max_cols], g_r[max_rows * max_cols];
float g_add[max_rows * max_cols];
bool g_key[max_cols], g_block[max_rows * max_cols];

void reset(std::size_t count) {
  std::memcpy(g_s, g_s0, count * sizeof(float));
  std::memcpy(g_r, g_s0, count * sizeof(float));
}
bool same(std::size_t count) { return std::memcmp(g_s, g_r, count * sizeof(float)) == 0; }

// n flags, true where a uniform draw exceeds 0.3.
void flags(bool* out, std::size_t n, std::uint64_t seed) {
  emha::test::fill_uniform(g_r, n, seed);
  for (std::size_t i = 0; i < n; ++i) out[i] = g_r[i] > 0.3f;
}

}  // namespace

EMHA_TEST_CASE("mask kernels match their references on every tail") {
  std::uint64_t seed = 1;
  for (std::size_t cols : emha::test::tail_sizes) {
    const std::size_t rows = cols % 7 + 1, lds = cols + 2, count = rows * lds;
    emha::test::fill_uniform(g_s0, count, seed++);
    flags(g_key, cols, seed++);
    flags(g_block, rows * (cols + 1), seed++);
    emha::test::fill_uniform(g_add, rows * (cols + 1), seed++);
    EMHA_INFO("rows=" << rows << " cols=" << cols);

    for (std::ptrdiff_t off : {std::ptrdiff_t(0), std::ptrdiff_t(1), std::ptrdiff_t(cols / 2),
                               std::ptrdiff_t(cols + 3), std::ptrdiff_t(-1), -std::ptrdiff_t(cols / 2 + 1),
                               -std::ptrdiff_t(cols + rows)}) {
      reset(count);
      emha::mask_causal_f32(rows, cols, off, g_s, lds);
      emha::mask_causal_f32_ref(rows, cols, off, g_r, lds);
      EMHA_CHECK(same(count));
    }
    for (std::ptrdiff_t off : {std::ptrdiff_t(0), std::ptrdiff_t(3), std::ptrdiff_t(cols + 3), std::ptrdiff_t(-2),
                               -std::ptrdiff_t(cols + rows)})
      for (std::size_t window : {std::size_t(1), std::size_t(2), cols / 3 + 1, cols + 5}) {
        reset(count);
        emha::mask_window_f32(rows, cols, off, window, g_s, lds);
        emha::mask_window_f32_ref(rows, cols, off, window, g_r, lds);
        EMHA_CHECK(same(count));
      }
    for (std::size_t valid : {std::size_t(0), std::size_t(1), cols / 2, cols, cols + 1}) {
      reset(count);
      emha::mask_key_valid_f32(rows, cols, valid, g_s, lds);
      emha::mask_key_valid_f32_ref(rows, cols, valid, g_r, lds);
      EMHA_CHECK(same(count));
    }
    reset(count);
    emha::mask_key_ignore_f32(rows, cols, g_key, g_s, lds);
    emha::mask_key_ignore_f32_ref(rows, cols, g_key, g_r, lds);
    EMHA_CHECK(same(count));
    for (std::ptrdiff_t diagonal : {std::ptrdiff_t(0), std::ptrdiff_t(3), -std::ptrdiff_t(cols)}) {
      reset(count);
      emha::mask_alibi_f32(rows, cols, diagonal, 0.125f, g_s, lds);
      emha::mask_alibi_f32_ref(rows, cols, diagonal, 0.125f, g_r, lds);
      EMHA_CHECK(same(count));
    }
    for (std::size_t ldm : {cols + 1, std::size_t(0)}) {
      reset(count);
      emha::mask_bool_f32(rows, cols, g_block, ldm, g_s, lds);
      emha::mask_bool_f32_ref(rows, cols, g_block, ldm, g_r, lds);
      EMHA_CHECK(same(count));
      for (std::size_t i = 0; i < count; ++i) g_s[i] = g_r[i] = 9.0f;
      emha::mask_bool_to_additive_f32(rows, cols, g_block, ldm, g_s, lds);
      emha::mask_bool_to_additive_f32_ref(rows, cols, g_block, ldm, g_r, lds);
      EMHA_CHECK(same(count));
      reset(count);
      emha::mask_add_f32(rows, cols, g_add, ldm, g_s, lds);
      emha::mask_add_f32_ref(rows, cols, g_add, ldm, g_r, lds);
      EMHA_CHECK(same(count));
    }
  }
}

EMHA_TEST_CASE("mask definitions: causal with a query offset (3 new queries after 2 cached keys)") {
  constexpr float ninf = emha::mask_neg_inf;
  for (std::size_t i = 0; i < 15; ++i) g_s[i] = 1.0f;
  emha::mask_causal_f32(3, 5, 2, g_s, 5);
  const float want[15] = {1, 1, 1, ninf, ninf, 1, 1, 1, 1, ninf, 1, 1, 1, 1, 1};
  for (int i = 0; i < 15; ++i) EMHA_CHECK(g_s[i] == want[i]);
}

// Soft-capping: cap * tanh(s / cap) against float64 over scores from far below to far above the
// cap (rows 0-2) and small ones (row 3: both sides of the polynomial's |y| = 0.5); the division,
// tanh's few ulp and the product: |error| <= 6 u |cap tanh(s / cap)|, and an infinite score
// stays the cap's sign (a masked -inf added later still masks). Strided rows.
EMHA_TEST_CASE("mask_softcap_f32 follows cap * tanh(s / cap) in float64") {
  constexpr std::size_t rows = 4, cols = 41, lds = 43;
  for (const float cap : {2.0f, 30.0f, 50.0f}) {
    for (std::size_t i = 0; i < rows * lds; ++i)
      g_s[i] = float(double(i % lds) - 20.0) * cap / 4.0f * float(i / lds + 1) / 2.0f;
    for (std::size_t j = 0; j < lds; ++j) g_s[3 * lds + j] = (float(j) - 21.0f) * cap / 32.0f + cap / 1000.0f;
    g_s[lds + 1] = emha::mask_neg_inf;
    std::memcpy(g_r, g_s, rows * lds * sizeof(float));
    emha::mask_softcap_f32(rows, cols, cap, g_s, lds);
    double worst = 0;
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t j = 0; j < lds; ++j) {
        const std::size_t i = r * lds + j;
        if (j >= cols) {
          EMHA_CHECK(g_s[i] == g_r[i]);  // past cols: untouched
          continue;
        }
        const double want = double(cap) * std::tanh(double(g_r[i]) / double(cap));
        const double err = std::fabs(double(g_s[i]) - want) / std::fabs(want) / emha::test::u32;
        worst = err > worst ? err : worst;
      }
    EMHA_MESSAGE("mask_softcap_f32, cap " << cap << ": max relative error " << worst << " u");
    EMHA_CHECK(worst <= 6);
    EMHA_CHECK(g_s[lds + 1] == -cap);
  }
}

// SPDX-License-Identifier: Apache-2.0
// Mask kernels against their scalar references, bit for bit (they write -inf or add one float),
// over tail lengths, query offsets, valid lengths and broadcast rows.

#include <cstddef>
#include <cstring>

#include "emha/kernels/mask.hpp"
#include "emha/kernels/mask_ref.hpp"
#include "runner.hpp"
#include "support/numeric.hpp"

namespace fw {
namespace {

constexpr std::size_t sizes[] = {1, 2, 3, 5, 7, 8, 9, 11, 13, 15, 16, 17, 31, 33, 37, 64, 127};
constexpr std::size_t max_rows = 7, max_cols = 127 + 2;

float g_s0[max_rows * max_cols], g_s[max_rows * max_cols], g_r[max_rows * max_cols];
float g_add[max_rows * max_cols];
bool g_key[max_cols], g_block[max_rows * max_cols];

void reset(std::size_t count) {
  std::memcpy(g_s, g_s0, count * sizeof(float));
  std::memcpy(g_r, g_s0, count * sizeof(float));
}
bool same(std::size_t count) { return std::memcmp(g_s, g_r, count * sizeof(float)) == 0; }

void flags(bool* out, std::size_t n, std::uint64_t seed) {
  emha::test::fill_uniform(g_r, n, seed);
  for (std::size_t i = 0; i < n; ++i) out[i] = g_r[i] > 0.3f;
}

}  // namespace

void test_mask() {
  Suite suite("mask");
  std::uint64_t seed = 1;
  for (std::size_t cols : sizes) {
    const std::size_t rows = cols % 7 + 1, lds = cols + 2, count = rows * lds;
    emha::test::fill_uniform(g_s0, count, seed++);
    flags(g_key, cols, seed++);
    flags(g_block, rows * (cols + 1), seed++);
    emha::test::fill_uniform(g_add, rows * (cols + 1), seed++);
    std::size_t bad = 0;
    for (std::size_t off : {std::size_t(0), std::size_t(1), cols / 2, cols + 3}) {
      reset(count);
      emha::mask_causal_f32(rows, cols, off, g_s, lds);
      emha::mask_causal_f32_ref(rows, cols, off, g_r, lds);
      bad += !same(count);
    }
    for (std::size_t valid : {std::size_t(0), std::size_t(1), cols / 2, cols, cols + 1}) {
      reset(count);
      emha::mask_key_valid_f32(rows, cols, valid, g_s, lds);
      emha::mask_key_valid_f32_ref(rows, cols, valid, g_r, lds);
      bad += !same(count);
    }
    reset(count);
    emha::mask_key_ignore_f32(rows, cols, g_key, g_s, lds);
    emha::mask_key_ignore_f32_ref(rows, cols, g_key, g_r, lds);
    bad += !same(count);
    for (std::ptrdiff_t diagonal : {std::ptrdiff_t(0), std::ptrdiff_t(3), -std::ptrdiff_t(cols)}) {
      reset(count);
      emha::mask_alibi_f32(rows, cols, diagonal, 0.125f, g_s, lds);
      emha::mask_alibi_f32_ref(rows, cols, diagonal, 0.125f, g_r, lds);
      bad += !same(count);
    }
    for (std::size_t ldm : {cols + 1, std::size_t(0)}) {
      reset(count);
      emha::mask_bool_f32(rows, cols, g_block, ldm, g_s, lds);
      emha::mask_bool_f32_ref(rows, cols, g_block, ldm, g_r, lds);
      bad += !same(count);
      reset(count);
      emha::mask_bool_to_additive_f32(rows, cols, g_block, ldm, g_s, lds);
      emha::mask_bool_to_additive_f32_ref(rows, cols, g_block, ldm, g_r, lds);
      bad += !same(count);
      reset(count);
      emha::mask_add_f32(rows, cols, g_add, ldm, g_s, lds);
      emha::mask_add_f32_ref(rows, cols, g_add, ldm, g_r, lds);
      bad += !same(count);
    }
    if (!check(bad == 0, "mask kernels equal their references bit for bit"))
      Line() << "  rows=" << rows << " cols=" << cols << ": " << bad << " mismatching calls";
  }

  // The definitions: causal with a query offset (3 new queries after 2 cached keys).
  constexpr float ninf = emha::mask_neg_inf;
  for (float& v : g_s) v = 1.0f;
  emha::mask_causal_f32(3, 5, 2, g_s, 5);
  const float want[15] = {1, 1, 1, ninf, ninf, 1, 1, 1, 1, ninf, 1, 1, 1, 1, 1};
  check(std::memcmp(g_s, want, sizeof want) == 0, "causal mask with a query offset");
}

}  // namespace fw

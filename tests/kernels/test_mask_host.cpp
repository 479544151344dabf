// SPDX-License-Identifier: Apache-2.0
// Mask kernels against their plain definitions on the host (doctest subcases): negative diagonals,
// windows, the ends of ptrdiff_t's range, padding by length and by flags, boolean masks, MaskView's
// broadcast, softmax after masking; and mask_attend_f32 at any strides. The sweeps against the
// scalar references and the causal definition with a query offset are test_mask.cpp's.

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "emha/kernels/mask.hpp"
#include "emha/kernels/mask_ref.hpp"
#include "emha/kernels/softmax.hpp"
#include "support/numeric.hpp"

namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("mask definitions") {
  constexpr float ninf = emha::mask_neg_inf;
  SUBCASE("causal with a negative diagonal (a key block starting after the first query)") {
    std::vector<float> s(3 * 4, 1.0f);
    emha::mask_causal_f32(3, 4, -2, s.data(), 4);  // keys 2..5 of queries 0..2
    const float want[12] = {ninf, ninf, ninf, ninf, ninf, ninf, ninf, ninf, 1, ninf, ninf, ninf};
    for (int i = 0; i < 12; ++i) CHECK(s[i] == want[i]);
  }
  SUBCASE("a window of 3 with the causal mask: each query keeps itself and the 2 keys before it") {
    std::vector<float> s(3 * 6, 1.0f);
    emha::mask_causal_f32(3, 6, 2, s.data(), 6);  // queries at positions 2, 3, 4 of keys 0..5
    emha::mask_window_f32(3, 6, 2, 3, s.data(), 6);
    const float want[18] = {1,    1,    1, ninf, ninf, ninf,  //
                            ninf, 1,    1, 1,    ninf, ninf,  //
                            ninf, ninf, 1, 1,    1,    ninf};
    for (int i = 0; i < 18; ++i) CHECK(s[i] == want[i]);
  }
  SUBCASE("window at the ends of ptrdiff_t's range: every key masked, or none (no overflow)") {
    constexpr std::ptrdiff_t big = PTRDIFF_MAX, small = PTRDIFF_MIN;
    for (std::ptrdiff_t diagonal : {big, big - 1, small, small + 1}) {
      const float want = diagonal > 0 ? ninf : 1.0f;
      std::vector<float> s(3 * 4, 1.0f);
      emha::mask_window_f32(3, 4, diagonal, 5, s.data(), 4);
      for (int i = 0; i < 12; ++i) CHECK(s[i] == want);
    }
  }
  SUBCASE("causal at the ends of ptrdiff_t's range: all keys visible, or none (no overflow)") {
    constexpr std::ptrdiff_t big = PTRDIFF_MAX, small = PTRDIFF_MIN;
    for (std::ptrdiff_t diagonal : {big, big - 1, small, small + 1}) {
      const float want = diagonal > 0 ? 1.0f : ninf;
      std::vector<float> s(3 * 4, 1.0f), r = s;
      emha::mask_causal_f32(3, 4, diagonal, s.data(), 4);
      emha::mask_causal_f32_ref(3, 4, diagonal, r.data(), 4);
      for (int i = 0; i < 12; ++i) {
        CHECK(s[i] == want);
        CHECK(r[i] == want);
      }
    }
  }
  SUBCASE("key padding by length and by flags agree") {
    std::vector<float> a(2 * 6, 0.5f), b = a;
    const bool ignore[6] = {false, false, false, false, true, true};
    emha::mask_key_valid_f32(2, 6, 4, a.data(), 6);
    emha::mask_key_ignore_f32(2, 6, ignore, b.data(), 6);
    CHECK(same_bits(a, b));
    CHECK(a[3] == 0.5f);
    CHECK(a[4] == ninf);
    CHECK(a[11] == ninf);
  }
  SUBCASE("boolean mask: true = masked; applied equals converted-then-added") {
    const bool m[4] = {true, false, false, true};
    std::vector<float> s(4, 2.0f), t(4, 2.0f), add(4);
    emha::mask_bool_f32(2, 2, m, 2, s.data(), 2);
    emha::mask_bool_to_additive_f32(2, 2, m, 2, add.data(), 2);
    emha::mask_add_f32(2, 2, add.data(), 2, t.data(), 2);
    CHECK(same_bits(s, t));
    CHECK(s[0] == ninf);
    CHECK(s[1] == 2.0f);
    CHECK(add[1] == 0.0f);
  }
  SUBCASE("MaskView broadcasts over heads and batch with zero strides") {
    float data[2 * 3 * 4];
    const emha::MaskView<float> per_head{data, 4, 12, 0};
    CHECK(per_head.block(1, 1) == data + 12);
    CHECK(per_head.block(0, 1) == data + 12);
    const emha::MaskView<float> per_batch_head{data, 4, 12, 24};
    CHECK(per_batch_head.block(1, 0) == data + 24);
    const emha::MaskView<float> shared{data, 4, 0, 0};
    CHECK(shared.block(5, 7) == data);
  }
  SUBCASE("masked scores give zero weight after softmax") {
    std::vector<float> s = emha::test::uniform(4 * 4, 11);
    emha::mask_causal_f32(4, 4, 0, s.data(), 4);
    emha::softmax_f32(4, 4, s.data(), 4, s.data(), 4);
    CHECK(s[1] == 0.0f);
    CHECK(s[0] == 1.0f);
    CHECK(s[4 + 2] == 0.0f);
  }
}

TEST_CASE("mask_attend_f32: labml's [S_q|1, S_kv, B|1] mask, 1 = attend, at any strides") {
  // A [3 x 5 x 2] mask (rows, keys, batch) read for batch 1 and for a broadcast row.
  constexpr std::size_t rows = 3, cols = 5, nb = 2;
  bool keep[rows * cols * nb];
  for (std::size_t i = 0; i < rows * cols * nb; ++i) keep[i] = (i * 7 + 3) % 5 != 0;
  for (std::size_t ld_row : {cols * nb, std::size_t(0)}) {
    float s[rows * 8];
    for (std::size_t i = 0; i < rows * 8; ++i) s[i] = float(i);
    emha::mask_attend_f32(rows, cols, keep + 1, ld_row, nb, s, 8);
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < 8; ++j) {
        const bool inside = j < cols;
        const bool masked = inside && !keep[1 + i * ld_row + j * nb];
        INFO("row " << i << " col " << j << " ld_row " << ld_row);
        if (masked) CHECK(s[i * 8 + j] == -INFINITY);
        else CHECK(s[i * 8 + j] == float(i * 8 + j));  // kept, or past cols: untouched
      }
  }
}

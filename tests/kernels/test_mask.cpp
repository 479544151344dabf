// SPDX-License-Identifier: Apache-2.0
// Mask kernels against their scalar references, element for element (masking writes -inf or adds
// one float: the results must be bit-identical), and against the plain definitions.

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

std::vector<bool> flags(std::size_t n, std::uint64_t seed) {
  const auto r = emha::test::uniform(n, seed);
  std::vector<bool> f(n);
  for (std::size_t i = 0; i < n; ++i) f[i] = r[i] > 0.3f;
  return f;
}

// std::vector<bool> is packed: copy into plain bools for the kernels.
struct Bools {
  explicit Bools(const std::vector<bool>& v) : n(v.size()), p(new bool[v.size() ? v.size() : 1]) {
    for (std::size_t i = 0; i < n; ++i) p[i] = v[i];
  }
  ~Bools() { delete[] p; }
  Bools(const Bools&) = delete;
  Bools& operator=(const Bools&) = delete;
  std::size_t n;
  bool* p;
};

}  // namespace

TEST_CASE("mask kernels match their references on every tail") {
  std::uint64_t seed = 1;
  for (std::size_t cols : emha::test::tail_sizes) {
    const std::size_t rows = cols % 7 + 1, lds = cols + 2;
    const auto s0 = emha::test::uniform(rows * lds, seed++);
    const Bools key(flags(cols, seed++));
    const Bools blk(flags(rows * (cols + 1), seed++));
    const auto add = emha::test::uniform(rows * (cols + 1), seed++);
    INFO("rows=" << rows << " cols=" << cols);

    for (std::ptrdiff_t off : {std::ptrdiff_t(0), std::ptrdiff_t(1), std::ptrdiff_t(cols / 2),
                               std::ptrdiff_t(cols + 3), std::ptrdiff_t(-1), -std::ptrdiff_t(cols / 2 + 1),
                               -std::ptrdiff_t(cols + rows)}) {
      auto s = s0, r = s0;
      emha::mask_causal_f32(rows, cols, off, s.data(), lds);
      emha::mask_causal_f32_ref(rows, cols, off, r.data(), lds);
      CHECK(same_bits(s, r));
    }
    for (std::ptrdiff_t off : {std::ptrdiff_t(0), std::ptrdiff_t(3), std::ptrdiff_t(cols + 3), std::ptrdiff_t(-2),
                               -std::ptrdiff_t(cols + rows)})
      for (std::size_t window : {std::size_t(1), std::size_t(2), cols / 3 + 1, cols + 5}) {
        auto s = s0, r = s0;
        emha::mask_window_f32(rows, cols, off, window, s.data(), lds);
        emha::mask_window_f32_ref(rows, cols, off, window, r.data(), lds);
        CHECK(same_bits(s, r));
      }
    for (std::size_t valid : {std::size_t(0), std::size_t(1), cols / 2, cols, cols + 1}) {
      auto s = s0, r = s0;
      emha::mask_key_valid_f32(rows, cols, valid, s.data(), lds);
      emha::mask_key_valid_f32_ref(rows, cols, valid, r.data(), lds);
      CHECK(same_bits(s, r));
    }
    {
      auto s = s0, r = s0;
      emha::mask_key_ignore_f32(rows, cols, key.p, s.data(), lds);
      emha::mask_key_ignore_f32_ref(rows, cols, key.p, r.data(), lds);
      CHECK(same_bits(s, r));
    }
    for (std::size_t ldm : {cols + 1, std::size_t(0)}) {
      auto s = s0, r = s0;
      emha::mask_bool_f32(rows, cols, blk.p, ldm, s.data(), lds);
      emha::mask_bool_f32_ref(rows, cols, blk.p, ldm, r.data(), lds);
      CHECK(same_bits(s, r));
      std::vector<float> o(rows * lds, 9.0f), o_ref = o;
      emha::mask_bool_to_additive_f32(rows, cols, blk.p, ldm, o.data(), lds);
      emha::mask_bool_to_additive_f32_ref(rows, cols, blk.p, ldm, o_ref.data(), lds);
      CHECK(same_bits(o, o_ref));
      s = s0;
      r = s0;
      emha::mask_add_f32(rows, cols, add.data(), ldm, s.data(), lds);
      emha::mask_add_f32_ref(rows, cols, add.data(), ldm, r.data(), lds);
      CHECK(same_bits(s, r));
    }
  }
}

TEST_CASE("mask definitions") {
  constexpr float ninf = emha::mask_neg_inf;
  SUBCASE("causal with a negative diagonal (a key block starting after the first query)") {
    std::vector<float> s(3 * 4, 1.0f);
    emha::mask_causal_f32(3, 4, -2, s.data(), 4);  // keys 2..5 of queries 0..2
    const float want[12] = {ninf, ninf, ninf, ninf, ninf, ninf, ninf, ninf, 1, ninf, ninf, ninf};
    for (int i = 0; i < 12; ++i) CHECK(s[i] == want[i]);
  }
  SUBCASE("causal with a query offset (3 new queries after 2 cached keys)") {
    std::vector<float> s(3 * 5, 1.0f);
    emha::mask_causal_f32(3, 5, 2, s.data(), 5);
    const float want[15] = {1, 1, 1, ninf, ninf, 1, 1, 1, 1, ninf, 1, 1, 1, 1, 1};
    for (int i = 0; i < 15; ++i) CHECK(s[i] == want[i]);
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

// SPDX-License-Identifier: Apache-2.0
// gemm_s8 (emha/kernels/gemm_s8.hpp): blocks of DotS8::rows rows of a (dot_s8_arch.hpp) times four
// rows of b (DotS8::cols where named), every step's loads shared across the block, its sums in
// rows x cols accumulators; k's tail past the last whole step (a masked vector step where DotS8
// loads parts, else scalar), n's past the last block of b and m's past the last block of a are
// the same loops with fewer rows. Integer sums: the reference's values on every variant.

#include "emha/kernels/gemm_s8.hpp"
#include "isa_kernels.hpp"
#include "kernels/dot_s8_arch.hpp"

#include <cstdint>
#include <type_traits>

namespace emha::detail {
inline namespace EMHA_ISA {

namespace {

using D = DotS8;

template <class T, class = void>
struct HasPart : std::false_type {};
template <class T>
struct HasPart<T, decltype(void(T::load_part(nullptr, 0)))> : std::true_type {};

// a[p] * b[p] for p in [from, k); 0 where D loads part of a step (the vector loops cover k).
inline std::int32_t tail(std::size_t from, std::size_t k, const std::int8_t* a, const std::int8_t* b) noexcept {
  if constexpr (HasPart<D>::value) return 0;
  std::int32_t s = 0;
  for (std::size_t p = from; p < k; ++p) s += std::int32_t(a[p]) * b[p];
  return s;
}

// c[r][j] += tail(kv, k, a_r, b_j) for r < m, j < n, where k has a tail past kv (the blocks in
// asm sum whole steps only). A template: only the Cortex-M targets call it.
template <class T = D>
[[gnu::always_inline]] inline void add_tails(std::size_t m, std::size_t n, std::size_t kv, std::size_t k, const std::int8_t* a,
                      std::size_t lda, const std::int8_t* b, std::size_t ldb, std::int32_t* c,
                      std::size_t ldc) noexcept {
  if (kv == k) return;
  for (std::size_t r = 0; r < m; ++r)
    for (std::size_t j = 0; j < n; ++j)
      c[r * ldc + j] = static_cast<std::int32_t>(std::uint32_t(c[r * ldc + j]) +
                                                 std::uint32_t(tail(kv, k, a + r * lda, b + j * ldb)));
}

// b's operand of D::madd: b + 128 where D::offset (dot_s8_arch.hpp), else b.
template <class T>
inline typename T::in load_b(const std::int8_t* p) noexcept {
  if constexpr (T::offset)
    return T::load_offset(p);
  else
    return T::load(p);
}

// The last n < step of a row of a, the rest 0 (T::load_part; a template: D has it or not).
template <class T>
inline typename T::in load_a_part(const std::int8_t* p, std::size_t n) noexcept {
  return T::load_part(p, n);
}

// The same of a row of b in madd's form (b + 128 where T::offset).
template <class T>
inline typename T::in load_b_part(const std::int8_t* p, std::size_t n) noexcept {
  if constexpr (T::offset)
    return T::offset_of(T::load_part(p, n));
  else
    return T::load_part(p, n);
}

// Where D::offset, each total carries 128 * sum_p a[r][p] (p < kv, or < k where T loads parts):
// that row's correction, computed once per row of a for all of b's rows (0 elsewhere).
template <class T>
inline std::int32_t correction(std::size_t kv, std::size_t k, const std::int8_t* a) noexcept {
  if constexpr (T::offset) {
    typename T::acc o = T::zero();
    for (std::size_t p = 0; p < kv; p += T::step) o = T::madd(o, T::unit(), T::load(a + p));
    if constexpr (HasPart<T>::value)
      if (kv < k) o = T::madd(o, T::unit(), T::load_part(a + kv, k - kv));
    return T::sum(o);
  } else {
    return 0;
  }
}

template <class T, class = void>
struct HasSum4 : std::false_type {};
template <class T>
struct HasSum4<T, decltype(void(T::sum4(nullptr, nullptr)))> : std::true_type {};

// t[j] = T::sum(s[j]) for j < 4: one reduction of the four where T has sum4.
template <class T = D>
inline void sum4(const typename T::acc* s, std::int32_t* t) noexcept {
  if constexpr (HasSum4<T>::value) {
    T::sum4(s, t);
  } else {
    for (std::size_t j = 0; j < 4; ++j) t[j] = T::sum(s[j]);
  }
}

// c[r][j] for R rows of a (stride lda) and C rows of b (stride ldb), c's rows ldc apart; corr[r]
// the correction of row r. Totals modulo 2^32: where D::offset the parts may wrap, the total not.
template <std::size_t R, std::size_t C>
inline void block(std::size_t k, const std::int8_t* a, std::size_t lda, const std::int8_t* b, std::size_t ldb,
                  const std::uint32_t* corr, std::int32_t* c, std::size_t ldc) noexcept {
  const std::size_t kv = k - k % D::step;  // elements the vector steps cover
  D::acc s[R][C];
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t j = 0; j < C; ++j) s[r][j] = D::zero();
  for (std::size_t p = 0; p < kv; p += D::step) {
    D::in x[R];
    for (std::size_t r = 0; r < R; ++r) x[r] = D::load(a + r * lda + p);
    for (std::size_t j = 0; j < C; ++j) {
      const D::in y = load_b<D>(b + j * ldb + p);
      for (std::size_t r = 0; r < R; ++r) s[r][j] = D::madd(s[r][j], y, x[r]);
    }
  }
  if constexpr (HasPart<D>::value)
    if (kv < k) {
      D::in x[R];
      for (std::size_t r = 0; r < R; ++r) x[r] = load_a_part<D>(a + r * lda + kv, k - kv);
      for (std::size_t j = 0; j < C; ++j) {
        const D::in y = load_b_part<D>(b + j * ldb + kv, k - kv);
        for (std::size_t r = 0; r < R; ++r) s[r][j] = D::madd(s[r][j], y, x[r]);
      }
    }
  // The vector sums first, then k's scalar tail where there is one: GCC 12 unrolls the first
  // loops only without the tail's calls in them.
  for (std::size_t r = 0; r < R; ++r) {
    std::int32_t t[C];
    if constexpr (C == 4) {
      sum4(s[r], t);
    } else {
      for (std::size_t j = 0; j < C; ++j) t[j] = D::sum(s[r][j]);
    }
    for (std::size_t j = 0; j < C; ++j) c[r * ldc + j] = static_cast<std::int32_t>(std::uint32_t(t[j]) - corr[r]);
  }
  if (!HasPart<D>::value && kv < k)
    for (std::size_t r = 0; r < R; ++r)
      for (std::size_t j = 0; j < C; ++j)
        c[r * ldc + j] = static_cast<std::int32_t>(std::uint32_t(c[r * ldc + j]) +
                                                   std::uint32_t(tail(kv, k, a + r * lda, b + j * ldb)));
}

// One row of a against four of b, the accumulators named and the pointers walking: GCC 12 keeps
// the array of the general block in memory when its accumulators are core registers (Helium's
// VMLADAVA, the M4's SMLAD), five stores per step, and indexes every load from the base (an add
// per load) where the pointers do not step themselves.
template <>
inline void block<1, 4>(std::size_t k, const std::int8_t* a, std::size_t, const std::int8_t* b, std::size_t ldb,
                        const std::uint32_t* corr, std::int32_t* c, std::size_t) noexcept {
  const std::size_t kv = k - k % D::step;
  const std::int8_t *p0 = b, *p1 = b + ldb, *p2 = b + 2 * ldb, *p3 = b + 3 * ldb;
  D::acc s0 = D::zero(), s1 = D::zero(), s2 = D::zero(), s3 = D::zero();
  for (const std::int8_t *x_at = a, *const end = a + kv; x_at != end; x_at += D::step) {
    const D::in x = D::load(x_at);
    s0 = D::madd(s0, load_b<D>(p0), x);
    s1 = D::madd(s1, load_b<D>(p1), x);
    s2 = D::madd(s2, load_b<D>(p2), x);
    s3 = D::madd(s3, load_b<D>(p3), x);
    p0 += D::step;
    p1 += D::step;
    p2 += D::step;
    p3 += D::step;
  }
  if constexpr (HasPart<D>::value)
    if (kv < k) {
      const D::in x = load_a_part<D>(a + kv, k - kv);
      s0 = D::madd(s0, load_b_part<D>(p0, k - kv), x);
      s1 = D::madd(s1, load_b_part<D>(p1, k - kv), x);
      s2 = D::madd(s2, load_b_part<D>(p2, k - kv), x);
      s3 = D::madd(s3, load_b_part<D>(p3, k - kv), x);
    }
  std::int32_t t[4];
  if constexpr (HasSum4<D>::value) {
    const D::acc s[4] = {s0, s1, s2, s3};
    sum4(s, t);
  } else {  // the accumulators stay named (core registers on Cortex-M)
    t[0] = D::sum(s0), t[1] = D::sum(s1), t[2] = D::sum(s2), t[3] = D::sum(s3);
  }
  const auto total = [&](std::int32_t sum, const std::int8_t* bj) __attribute__((always_inline)) {  // GCC 12 does not
    const std::uint32_t rest = kv == k ? 0u : std::uint32_t(tail(kv, k, a, bj));  // unroll a loop of them
    return static_cast<std::int32_t>(std::uint32_t(sum) - corr[0] + rest);
  };
  c[0] = total(t[0], b);
  c[1] = total(t[1], b + ldb);
  c[2] = total(t[2], b + 2 * ldb);
  c[3] = total(t[3], b + 3 * ldb);
}

// Two rows of a against the first 2 (n / 2) rows of b (Cortex-M4/M7: DotS8::cols 2): the rows
// widened by DotS8::widen_2, DotS8::widen_quads steps at a time (the sums of later parts added),
// then DotS8::blocks_2x2's blocks; k's scalar tail added to each. Returns the rows of b done
// (none where k < 4).
// Inlined: a frame of its own, beside gemm_s8's, would take the M4's layer past 1 KiB of stack.
template <class T = D>
[[gnu::always_inline]] inline std::size_t blocks_2x2(std::size_t n, std::size_t k, const std::int8_t* a,
                                                     std::size_t lda, const std::int8_t* b, std::size_t ldb,
                                                     std::int32_t* c, std::size_t ldc) noexcept {
  static_assert(!T::offset);
  const std::size_t kv = k - k % T::step, blocks = n / 2;
  if (blocks == 0 || kv == 0) return 0;  // k < 4: block<2, 1> sums the tails alone
  typename T::widened w[4 * T::widen_quads];
  for (std::size_t p = 0; p < kv; p += T::step * T::widen_quads) {
    const std::size_t quads = (kv - p) / T::step < T::widen_quads ? (kv - p) / T::step : T::widen_quads;
    T::widen_2(a + p, a + lda + p, quads, w);
    T::blocks_2x2(w, quads, b + p, ldb, c, ldc, blocks, p > 0);
  }
  add_tails(2, 2 * blocks, kv, k, a, lda, b, ldb, c, ldc);
  return 2 * blocks;
}

// Four rows of a against four of b, the 16 accumulators named (AVX-512 VNNI, DotS8::rows 4): GCC
// 12 keeps the general block's array of them on the stack, storing and reloading around the loop.
template <class T = D>
inline void block_4x4(std::size_t k, const std::int8_t* a, std::size_t lda, const std::int8_t* b, std::size_t ldb,
                      const std::uint32_t* corr, std::int32_t* c, std::size_t ldc) noexcept {
  const std::size_t kv = k - k % D::step;
  const std::int8_t *a1 = a + lda, *a2 = a + 2 * lda, *a3 = a + 3 * lda;
  const std::int8_t *b1 = b + ldb, *b2 = b + 2 * ldb, *b3 = b + 3 * ldb;
  D::acc s00 = D::zero(), s01 = D::zero(), s02 = D::zero(), s03 = D::zero(), s10 = D::zero(), s11 = D::zero(),
         s12 = D::zero(), s13 = D::zero(), s20 = D::zero(), s21 = D::zero(), s22 = D::zero(), s23 = D::zero(),
         s30 = D::zero(), s31 = D::zero(), s32 = D::zero(), s33 = D::zero();
  // One step at p of n elements (n < D::step: the last, in parts); each row of b loaded as used.
  const auto step = [&](std::size_t p, std::size_t n) {
    const bool whole = n == D::step;
    const auto x = [&](const std::int8_t* r) { return whole ? D::load(r + p) : load_a_part<D>(r + p, n); };
    const auto y = [&](const std::int8_t* r) { return whole ? load_b<D>(r + p) : load_b_part<D>(r + p, n); };
    const D::in x0 = x(a), x1 = x(a1), x2 = x(a2), x3 = x(a3);
    D::in v = y(b);
    s00 = D::madd(s00, v, x0), s10 = D::madd(s10, v, x1), s20 = D::madd(s20, v, x2), s30 = D::madd(s30, v, x3);
    v = y(b1);
    s01 = D::madd(s01, v, x0), s11 = D::madd(s11, v, x1), s21 = D::madd(s21, v, x2), s31 = D::madd(s31, v, x3);
    v = y(b2);
    s02 = D::madd(s02, v, x0), s12 = D::madd(s12, v, x1), s22 = D::madd(s22, v, x2), s32 = D::madd(s32, v, x3);
    v = y(b3);
    s03 = D::madd(s03, v, x0), s13 = D::madd(s13, v, x1), s23 = D::madd(s23, v, x2), s33 = D::madd(s33, v, x3);
  };
  for (std::size_t p = 0; p < kv; p += D::step) step(p, D::step);
  if constexpr (HasPart<D>::value)
    if (kv < k) step(kv, k - kv);
  const D::acc s[4][4] = {{s00, s01, s02, s03}, {s10, s11, s12, s13}, {s20, s21, s22, s23}, {s30, s31, s32, s33}};
  for (std::size_t r = 0; r < 4; ++r) {
    std::int32_t t[4];
    sum4(s[r], t);
    for (std::size_t j = 0; j < 4; ++j) {
      const std::uint32_t rest =
          HasPart<D>::value || kv == k ? 0u : std::uint32_t(tail(kv, k, a + r * lda, b + j * ldb));
      c[r * ldc + j] = static_cast<std::int32_t>(std::uint32_t(t[j]) - corr[r] + rest);
    }
  }
}

// Two rows of a against b's rows (Helium), then k's scalar tail added to each. Up to
// DotS8::wide_steps steps and n >= 4: DotS8::blocks_2x4's blocks, n's last n % 4 by one more
// block over b's last four (the sums of the first of them written again, the same values), all
// n done. Else the first 3 (n / 3) by DotS8::blocks_2x3, and where n % 3 is 2 and k has no tail,
// the last two as well. Returns the rows of b done (none where k < 16). The corrections are 0.
template <class T = D>
inline std::size_t blocks_helium(std::size_t n, std::size_t k, const std::int8_t* a, std::size_t lda,
                                 const std::int8_t* b, std::size_t ldb, std::int32_t* c, std::size_t ldc) noexcept {
  static_assert(!T::offset);
  const std::size_t kv = k - k % T::step, blocks = n / 3;
  if (blocks == 0 || kv == 0) return 0;  // k < 16: block<2, 1> sums the tails alone
  if (n >= 4 && kv / T::step <= T::wide_steps) {
    T::blocks_2x4(n / 4, n % 4 ? 4 - n % 4 : 0, kv / T::step, a, lda, b, ldb, c, ldc);
    add_tails(2, n, kv, k, a, lda, b, ldb, c, ldc);
    return n;
  }
  T::blocks_2x3(blocks, kv / T::step, a, lda, b, ldb, c, ldc);
  add_tails(2, 3 * blocks, kv, k, a, lda, b, ldb, c, ldc);
  if (n % 3 == 2 && kv == k) {  // the last two rows of b: one more block over b's last three, the
    // first of them again (its sums written twice, the same values), cheaper than two 2 x 1 blocks
    T::blocks_2x3(1, kv / T::step, a, lda, b + (n - 3) * ldb, ldb, c + (n - 3), ldc);
    return n;
  }
  return 3 * blocks;
}

template <class T, class = void>
struct Cols {
  static constexpr std::size_t value = 4;
};
template <class T>
struct Cols<T, decltype(void(T::cols))> {
  static constexpr std::size_t value = T::cols;
};

// R rows of a against every row of b: blocks of DotS8::cols rows of b where R > 1 and D names
// them, else 4. Inlined into gemm_s8, as blocks_2x2 is: one frame, not three.
template <std::size_t R>
[[gnu::always_inline]] inline void rows(std::size_t n, std::size_t k, const std::int8_t* a, std::size_t lda,
                                        const std::int8_t* b, std::size_t ldb, std::int32_t* c,
                                        std::size_t ldc) noexcept {
  std::uint32_t corr[R];
  for (std::size_t r = 0; r < R; ++r) corr[r] = std::uint32_t(correction<D>(k - k % D::step, k, a + r * lda));
  std::size_t j = 0;
  constexpr std::size_t C = R > 1 ? Cols<D>::value : 4;
  if constexpr (R == 2 && C == 3)  // DotS8::cols 3: Helium, the loops over blocks in asm
    j = blocks_helium(n, k, a, lda, b, ldb, c, ldc);
  else if constexpr (R == 2 && C == 2)  // DotS8::cols 2: Cortex-M4/M7, the same
    j = blocks_2x2(n, k, a, lda, b, ldb, c, ldc);
  else
    for (; j + C <= n; j += C) {
      if constexpr (R == 4 && C == 4)
        block_4x4(k, a, lda, b + j * ldb, ldb, corr, c + j, ldc);
      else
        block<R, C>(k, a, lda, b + j * ldb, ldb, corr, c + j, ldc);
    }
  for (; j < n; ++j) block<R, 1>(k, a, lda, b + j * ldb, ldb, corr, c + j, ldc);
}

// gemm_s8's whole body (one frame: blocks_2x2 and the blocks inlined).
[[gnu::always_inline]] inline void all_rows(std::size_t m, std::size_t n, std::size_t k, const std::int8_t* a,
                                            std::size_t lda, const std::int8_t* b, std::size_t ldb, std::int32_t* c,
                                            std::size_t ldc) noexcept {
  std::size_t i = 0;
  for (; i + D::rows <= m; i += D::rows) rows<D::rows>(n, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc);
  for (; i < m; ++i) rows<1>(n, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc);
}

template <class T, class = void>
struct HasStage : std::false_type {};
template <class T>
struct HasStage<T, decltype(void(T::stage_rows))> : std::true_type {};

// R rows of a from gemm_s8_staged (Cortex-M4/M7, armv6): widened into the stage once
// (DotS8::widen_stage), then run against every row of b (DotS8::blocks_stage), k's scalar tail
// added.
template <std::size_t R, class T = D>
inline void staged_block(std::size_t n, std::size_t kv, std::size_t k, const std::int8_t* a, std::size_t lda,
                         const std::int8_t* b, std::size_t ldb, std::int32_t* c, std::size_t ldc,
                         typename T::widened* w) noexcept {
  T::template widen_stage<R>(a, lda, kv / T::step, w);
  T::template blocks_stage<R>(w, kv / T::step, b, ldb, c, ldc, n);
  add_tails(R, n, kv, k, a, lda, b, ldb, c, ldc);
}

// gemm_s8_staged's rows of a in blocks of DotS8::stage_rows (6), then one of 4 or 5 where that
// many are left. Returns the rows of a done: none where the stage is short, k < 8 or n = 0.
// A frame of its own, returned from before gemm_s8's (a tail call) begins.
template <class T = D>
[[gnu::noinline]] std::size_t staged_rows(std::size_t m, std::size_t n, std::size_t k, const std::int8_t* a,
                                          std::size_t lda, const std::int8_t* b, std::size_t ldb, std::int32_t* c,
                                          std::size_t ldc, std::int16_t* stage, std::size_t stage_len) noexcept {
  const std::size_t kv = k - k % T::step;
  if (kv < 2 * T::step || n == 0 || stage == nullptr || stage_len < gemm_s8_stage_len(k)) return 0;
  // 4-byte aligned for LDRD: one int16 on where stage is not (gemm_s8_stage_len leaves room)
  auto* w = reinterpret_cast<typename T::widened*>(stage + reinterpret_cast<std::uintptr_t>(stage) / 2 % 2);
  std::size_t i = 0;
  for (; i + T::stage_rows <= m; i += T::stage_rows)
    staged_block<T::stage_rows>(n, kv, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, w);
  if (m - i == 5) {
    staged_block<5>(n, kv, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, w);
    i += 5;
  } else if (m - i == 4) {
    staged_block<4>(n, kv, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, w);
    i += 4;
  }
  return i;
}

}  // namespace

// Not inlined into gemm_s8_staged, which calls it last.
[[gnu::noinline]] void gemm_s8(std::size_t m, std::size_t n, std::size_t k, const std::int8_t* a, std::size_t lda,
                               const std::int8_t* b, std::size_t ldb, std::int32_t* c, std::size_t ldc) noexcept {
  all_rows(m, n, k, a, lda, b, ldb, c, ldc);
}

void gemm_s8_staged(std::size_t m, std::size_t n, std::size_t k, const std::int8_t* a, std::size_t lda,
                    const std::int8_t* b, std::size_t ldb, std::int32_t* c, std::size_t ldc, std::int16_t* stage,
                    std::size_t stage_len) noexcept {
  std::size_t i = 0;
  if constexpr (HasStage<D>::value) i = staged_rows(m, n, k, a, lda, b, ldb, c, ldc, stage, stage_len);
  // The rest by a tail call: the stack's deepest point is gemm_s8's frame, not this one's on it.
  gemm_s8(m - i, n, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc);
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

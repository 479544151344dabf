// SPDX-License-Identifier: Apache-2.0
#pragma once
// The VNNI pass's attention (mha_s8_vnni.hpp, steps 2 and 3): Q K^T 4 query rows x 64 keys a
// block from the sums' terms, the softmax four rows at a time, the probabilities + 128 by 4, and
// P V 8 channels x 32 query rows a block.

#include "simd_arch.hpp"
#if EMHA_SIMD && defined(__AVX512VNNI__) && defined(__AVX512BW__)
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "attention/mha_s8_general.hpp"
#include "attention/mha_s8_vnni_lanes.hpp"
#include "emha/detail/mha_s8_plan.hpp"
#include "emha/kernels/softmax_s8.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {
namespace vnni {

// K's terms of Q K^T: kt[j] = -(128 + z_Q) sum_d k[j][d] for head g's keys j < skv (K by 4, dk / 4
// groups of skv * 4 bytes from kg).
inline void key_terms(std::size_t skv, std::size_t dk, const std::int8_t* kg, std::int32_t z_q, std::int32_t* kt) noexcept {
  const __m512i ones = _mm512_set1_epi8(1), times = _mm512_set1_epi32(-(128 + z_q));
  for (std::size_t j = 0; j < skv; j += 16) {
    const __mmask16 m = first(skv - j);
    __m512i s = _mm512_setzero_si512();
    for (std::size_t g = 0; g < dk / 4; ++g) s = madd(s, ones, _mm512_maskz_loadu_epi32(m, kg + (g * skv + j) * 4));
    _mm512_mask_storeu_epi32(kt + j, m, _mm512_mullo_epi32(s, times));
  }
}

// What step 2 and 3 read.
struct Attend {
  std::size_t dk, sq, skv;
  const std::int8_t *q, *k, *vt;  // head h's Q (by 4, + 128), head g's K (by 4), V^T's rows
  const std::int32_t* kt;         // key_terms of head g [skv]
  const MhaS8Weights* w;
};

// Step 2's products for 4 query rows (q[r]: their dwords of Q by 4, groups gq bytes apart; rows of
// them stored) against keys j0 .. j0 + 63 (Tail: those of m[v] in vector v, where the loads are
// masked; else whole): requantized scores to s (rows skv apart). Its accumulators local and every
// loop over them unrolled (in registers).
template <bool Tail>
inline void scores_block(const Attend& a, const std::int8_t* const* q, const __m512i* row_term, std::size_t rows,
                         std::size_t j0, const __mmask16* m, const L::Multipliers& mq, __m512i zp,
                         std::int8_t* s) noexcept {
  const std::size_t gq = a.sq * 4, gk = a.skv * 4;
  __m512i acc[4][4];  // from the sums' terms: K's per key, Q's per row
#pragma GCC unroll 4
  for (std::size_t v = 0; v < 4; ++v) {
    const __m512i kt = Tail ? _mm512_maskz_loadu_epi32(m[v], a.kt + j0 + 16 * v) : _mm512_loadu_si512(a.kt + j0 + 16 * v);
#pragma GCC unroll 4
    for (std::size_t r = 0; r < 4; ++r) acc[r][v] = L::add(kt, row_term[r]);
  }
  const std::int8_t* kg = a.k + j0 * 4;
  for (std::size_t g = 0; g < a.dk / 4; ++g, kg += gk) {
    __m512i kv[4];
#pragma GCC unroll 4
    for (std::size_t v = 0; v < 4; ++v)
      kv[v] = Tail ? _mm512_maskz_loadu_epi32(m[v], kg + 64 * v) : _mm512_loadu_si512(kg + 64 * v);
#pragma GCC unroll 4
    for (std::size_t r = 0; r < 4; ++r) {
      const __m512i qv = _mm512_set1_epi32(dword<false>(q[r] + g * gq));
#pragma GCC unroll 4
      for (std::size_t v = 0; v < 4; ++v) acc[r][v] = madd(acc[r][v], qv, kv[v]);
    }
  }
#pragma GCC unroll 4
  for (std::size_t v = 0; v < 4; ++v) {
    const __mmask16 mv = Tail ? m[v] : __mmask16(0xffff);
#pragma GCC unroll 4
    for (std::size_t r = 0; r < 4; ++r)
      if (r < rows) _mm512_mask_cvtsepi32_storeu_epi8(s + r * a.skv + j0 + 16 * v, mv, L::apply(acc[r][v], mq, zp));
  }
}

// Q's terms of Q K^T for query rows i .. i + 31 of head h (those past sq any): t[r] =
// -z_K sum_d q + d_k z_Q z_K, with sum_d q = sum_d (q + 128) - 128 d_k, from Q by 4 (a VPDPBUSD
// of its bytes with ones per group).
inline void query_terms(const Attend& a, std::size_t i, std::int32_t* t) noexcept {
  const __m512i ones = _mm512_set1_epi8(1);
  const auto zq = std::uint32_t(a.w->zero_point_q), zk = std::uint32_t(a.w->zero_point_k), dk = std::uint32_t(a.dk);
  const __m512i base = L::splat(static_cast<std::int32_t>(zk * 128u * dk + dk * zq * zk));
  const __m512i minus_zk = L::splat(-a.w->zero_point_k);
  for (std::size_t u = 0; u < mha_s8_pack_queries; u += 16) {
    const __mmask16 m = i + u < a.sq ? first(a.sq - i - u) : 0;
    __m512i sum = _mm512_setzero_si512();
    for (std::size_t g = 0; g < a.dk / 4; ++g)
      sum = madd(sum, _mm512_maskz_loadu_epi32(m, a.q + (g * a.sq + i + u) * 4), ones);
    _mm512_storeu_si512(t + u, L::add(base, _mm512_mullo_epi32(sum, minus_zk)));
  }
}

// Step 2's Q K^T for query rows i .. i + rows - 1 (rows <= 4; t: their query_terms) against keys
// 0 .. reach - 1, their requantized scores to s (rows skv apart).
inline void scores(const Attend& a, std::size_t i, std::size_t rows, const std::int32_t* t, std::size_t reach,
                   std::int8_t* s) noexcept {
  const std::int8_t* q[4];
  __m512i row_term[4];
  for (std::size_t r = 0; r < 4; ++r) {  // rows past `rows` repeat the last (computed, not stored)
    const std::size_t at = r < rows ? r : rows - 1;
    q[r] = a.q + (i + at) * 4;
    row_term[r] = L::splat(t[at]);
  }
  L::Multipliers mq{};  // as project_block
  mq = L::broadcast(a.w->scores);
  const __m512i zp = L::splat(a.w->zero_point_scores);
  std::size_t j0 = 0;
  for (; j0 + 64 <= reach; j0 += 64) scores_block<false>(a, q, row_term, rows, j0, nullptr, mq, zp, s);
  if (j0 < reach) {
    __mmask16 m[4];
    for (std::size_t v = 0; v < 4; ++v) m[v] = j0 + 16 * v < reach ? first(reach - j0 - 16 * v) : 0;
    scores_block<true>(a, q, row_term, rows, j0, m, mq, zp, s);
  }
}

// Query rows r0 .. r0 + n - 1's probabilities (n <= 4 rows of skv int8 at rows) + 128 by 4 into p
// ([round_up4(skv) / 4][32][4]), the bytes past skv 0: four rows' 16 keys a 4 x 4 transpose of
// dwords, the rest a dword at a time.
inline void store_probabilities(std::size_t skv, const std::int8_t* rows, std::size_t n, std::size_t r0,
                                std::int8_t* p) noexcept {
  constexpr std::size_t group = mha_s8_pack_queries * 4;
  const auto load = [&](std::size_t r, std::size_t j) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows + r * skv + j));
  };
  const auto store = [&](std::size_t g, __m128i v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p + g * group + r0 * 4), _mm_xor_si128(v, _mm_set1_epi8(-128)));
  };
  std::size_t j = 0;
  if (n == 4)
    for (; j + 16 <= skv; j += 16) {
      const __m128i r0r1_lo = _mm_unpacklo_epi32(load(0, j), load(1, j)), r0r1_hi = _mm_unpackhi_epi32(load(0, j), load(1, j));
      const __m128i r2r3_lo = _mm_unpacklo_epi32(load(2, j), load(3, j)), r2r3_hi = _mm_unpackhi_epi32(load(2, j), load(3, j));
      store(j / 4, _mm_unpacklo_epi64(r0r1_lo, r2r3_lo));
      store(j / 4 + 1, _mm_unpackhi_epi64(r0r1_lo, r2r3_lo));
      store(j / 4 + 2, _mm_unpacklo_epi64(r0r1_hi, r2r3_hi));
      store(j / 4 + 3, _mm_unpackhi_epi64(r0r1_hi, r2r3_hi));
    }
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t k = j; k < skv; k += 4) {
      const std::int32_t v = dword<true>(rows + r * skv + k, skv - k < 4 ? skv - k : 4);
      std::memcpy(p + k / 4 * group + (r0 + r) * 4, &v, 4);
    }
}

// Step 3's channels c .. c + C - 1 of head h for the NV vectors of query rows from i (rows of them;
// their probabilities + 128 by 4 at p, mha_s8_pack_queries rows; p_term[v]: -z_V sum_j (p + 128)
// of vector v's rows): the context requantized, + 128 by 4 to ctx (groups sq * 4 bytes apart). Its
// accumulators local, C x NV of them: enough independent chains to cover VPDPBUSD's latency. The
// step is project_step's shape, written out: through that function the pass ran slower
// (bench/README.md history).
template <std::size_t C, std::size_t NV>
inline void context_block(const Attend& a, const std::int8_t* p, const __m512i* p_term, std::size_t c, std::size_t i,
                          std::size_t rows, std::size_t h, const L::Multipliers& mq, __m512i zp,
                          std::int8_t* ctx) noexcept {
  constexpr std::size_t group = mha_s8_pack_queries * 4;
  const std::size_t skv = a.skv;
  const std::int8_t* v = a.vt + c * skv;
  __m512i acc[C][NV];
#pragma GCC unroll 16
  for (std::size_t ch = 0; ch < C; ++ch)
#pragma GCC unroll 4
    for (std::size_t u = 0; u < NV; ++u) acc[ch][u] = _mm512_setzero_si512();
  for (std::size_t j = 0; j < skv; j += 4) {
    const std::size_t bytes = skv - j < 4 ? skv - j : 4;  // 4 but in the last group
    const std::int8_t* pg = p + j / 4 * group;
    __m512i pv[NV];
#pragma GCC unroll 4
    for (std::size_t u = 0; u < NV; ++u) pv[u] = _mm512_loadu_si512(pg + 64 * u);
#pragma GCC unroll 8
    for (std::size_t ch = 0; ch < C; ++ch) {
      const std::int8_t* at = v + ch * skv + j;
      const __m512i b = _mm512_set1_epi32(bytes == 4 ? dword<false>(at) : dword<false>(at, bytes));
#pragma GCC unroll 4
      for (std::size_t u = 0; u < NV; ++u) acc[ch][u] = madd(acc[ch][u], pv[u], b);
    }
  }
#pragma GCC unroll 4
  for (std::size_t u = 0; u < NV; ++u) {
    if (16 * u >= rows) break;
#pragma GCC unroll 8
    for (std::size_t ch = 0; ch < C; ++ch) acc[ch][u] = L::apply(L::add(acc[ch][u], p_term[u]), mq, zp);
#pragma GCC unroll 2
    for (std::size_t q = 0; q < C; q += 4) {
      const __m512i z = offset(interleave4(acc[q][u], acc[q + 1][u], acc[q + 2][u], acc[q + 3][u]));
      _mm512_mask_storeu_epi32(ctx + (h * a.dk + c + q) / 4 * a.sq * 4 + (i + 16 * u) * 4, first(rows - 16 * u), z);
    }
  }
}

// Step 3 for query rows i .. i + rows - 1 (rows <= mha_s8_pack_queries; their probabilities + 128
// by 4 at p): head h's context, requantized, + 128 by 4 to ctx.
inline void context(const Attend& a, const std::int8_t* p, std::size_t i, std::size_t rows, std::size_t h,
                    std::int8_t* ctx) noexcept {
  constexpr std::size_t NV = mha_s8_pack_queries / 16;
  const __m512i ones = _mm512_set1_epi8(1), minus_zv = _mm512_set1_epi32(-a.w->zero_point_v);
  __m512i p_term[NV];
  for (std::size_t u = 0; u < NV; ++u) {
    __m512i psum = _mm512_setzero_si512();  // sum_j (p + 128) per row
    for (std::size_t g = 0; g < (a.skv + 3) / 4; ++g)
      psum = madd(psum, _mm512_loadu_si512(p + g * mha_s8_pack_queries * 4 + 64 * u), ones);
    p_term[u] = _mm512_mullo_epi32(psum, minus_zv);
  }
  L::Multipliers mq{};  // as project_block
  mq = L::broadcast(a.w->context);
  const __m512i zp = L::splat(a.w->zero_point_context);
  std::size_t c = 0;
  for (; c + 8 <= a.dk; c += 8) context_block<8, NV>(a, p, p_term, c, i, rows, h, mq, zp, ctx);
  if (c < a.dk) context_block<4, NV>(a, p, p_term, c, i, rows, h, mq, zp, ctx);  // d_k is a multiple of 4
}

// softmax_s8_row's bytes (emha/kernels/softmax_s8.hpp) for `rows` <= 4 rows of scores at x (row r:
// n[r] >= 1 of them, ld apart) to y (the same layout; in place allowed), on 16 lanes: the exps
// gathered from the table into `exps` (rows x ld int32 of scratch), their sum in Q12.19 (each
// exp, >= 0, rescaled as RoundingDivideByPOT(e, 12): (e + 2^11) >> 12), its reciprocal
// (softmax_s8_inverse) the multiplier that requantizes them. The rows' passes interleave: a
// reciprocal is a chain of dependent products, and the rows' independent chains overlap.
inline void softmax_rows(std::size_t rows, const std::size_t* n, const std::int8_t* x, std::size_t ld,
                         const SoftmaxS8Table& t, std::int8_t* y, std::int32_t* exps) noexcept {
  std::int32_t sums[4];
  for (std::size_t r = 0; r < rows; ++r) {
    const std::int8_t* xr = x + r * ld;
    std::int32_t* er = exps + r * ld;
    __m512i top = _mm512_set1_epi32(INT8_MIN);
    vectors(n[r], [&](auto whole, std::size_t j, __mmask16 m) {
      top = whole ? _mm512_max_epi32(top, load_s8(whole, xr + j, m))
                  : _mm512_mask_max_epi32(top, m, top, load_s8(whole, xr + j, m));
    });
    const __m512i max = _mm512_set1_epi32(max_lane(top)), half = _mm512_set1_epi32(1 << 11);
    __m512i sum = _mm512_setzero_si512();
    vectors(n[r], [&](auto whole, std::size_t j, __mmask16 m) {
      const __m512i k = _mm512_sub_epi32(max, load_s8(whole, xr + j, m));  // [0, 255]
      __m512i e;  // 0 past n: it adds nothing to the sum
      if constexpr (whole) {
        e = _mm512_i32gather_epi32(k, t.exp, 4);
        _mm512_storeu_si512(er + j, e);
      } else {
        e = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, k, t.exp, 4);
        _mm512_mask_storeu_epi32(er + j, m, e);
      }
      sum = _mm512_add_epi32(sum, _mm512_srli_epi32(_mm512_add_epi32(e, half), 12));
    });
    sums[r] = DotS8::sum(sum);
  }
  QuantizedMultiplier inverse[4];
  for (std::size_t r = 0; r < rows; ++r) inverse[r] = softmax_s8_inverse(sums[r]);
  const __m512i zp = L::splat(INT8_MIN);
  for (std::size_t r = 0; r < rows; ++r) {
    L::Multipliers q{};  // as project_block
    q = L::broadcast(inverse[r]);
    vectors(n[r], [&](auto whole, std::size_t j, __mmask16 m) {
      const std::int32_t* e = exps + r * ld + j;
      _mm512_mask_cvtsepi32_storeu_epi8(y + r * ld + j, m,
                                        L::apply(whole ? _mm512_loadu_si512(e) : _mm512_maskz_loadu_epi32(m, e), q, zp));
    });
  }
}

}  // namespace vnni
}  // namespace EMHA_ISA
}  // namespace emha::detail

#endif

// SPDX-License-Identifier: Apache-2.0
#pragma once
// The full-integer layer's pass on AVX-512 VNNI (mha_s8_forward.cpp runs it for double rounding
// where head_dim is a multiple of 4, the general pass otherwise): the general pass's steps and
// bytes, with every product a VPDPBUSD of a vector against a broadcast dword, so that each
// accumulator holds 16 outputs and no sum is reduced across lanes.
//   "By 4": a [rows x dim] int8 matrix stored [dim / 4][rows][4], the dword (g, i) holding row
//   i's elements 4g .. 4g + 3; 16 consecutive dwords are 16 rows' four elements, one vector.
//   VPDPBUSD multiplies unsigned bytes by signed ones. The operand that is neither a weight nor
//   K or V is stored + 128 (unsigned: x ^ 0x80), and the 128 comes back out through a row sum,
//   as the zero points do:
//   1. Q, K, V: the input + 128, by 4, 64 rows at a time, against each weight row's dwords
//      broadcast: 4 output channels x 64 rows in 16 accumulators. sum_k w x = sum_k w (x + 128)
//      - 128 sum_k w: the weights' row sums join the bias once per forward. Requantized in
//      registers; Q stored by 4 and + 128, K by 4, V^T as rows (a channel's rows contiguous).
//   2. Per head and 4 query rows, Q K^T: each row's dword of Q broadcast against 16 keys' of K,
//      4 rows x 64 keys per block. sum_d (q + 128) k = sum_d q k + 128 sum_d k, and sum_d k is
//      K's row sum (the general pass's term, there times -z_Q, here -(128 + z_Q)). Scores
//      requantized in registers, the softmax four rows at a time (the general pass's bytes); the
//      probabilities + 128 (their zero point is -128: p + 128 is the weight, 0 for a masked key)
//      stored by 4 for mha_s8_pack_queries (32) query rows.
//   3. Per head and 32 query rows, P V: V^T's dword per channel broadcast against the rows'
//      probabilities, 8 channels x 32 rows per block; sum_j (p + 128)(v - z_V) =
//      sum_j (p + 128) v - z_V sum_j (p + 128). The context requantized, stored by 4 and + 128
//      for step 4.
//   4. out: as step 1, from the context, written row by row in the caller's layout.

#include "simd_arch.hpp"
#if EMHA_SIMD && defined(__AVX512VNNI__) && defined(__AVX512BW__)
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "attention/integer_pass.hpp"
#include "attention/mha_s8_general.hpp"
#include "emha/attention/options_s8.hpp"
#include "emha/detail/mha_s8_plan.hpp"
#include "emha/kernels/softmax_s8.hpp"
#include "kernels/dot_s8_arch.hpp"
#include "kernels/requant_arch.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {
namespace vnni {

using L = RequantLanes;  // 16 int32 lanes

// acc + (unsigned bytes of u) . (signed bytes of s), per dword lane.
inline __m512i madd(__m512i acc, __m512i u, __m512i s) noexcept { return DotS8::madd(acc, u, s); }

// The largest of the 16 lanes (halves by __builtin_shufflevector, as halves_epi32 in
// dot_s8_arch.hpp: GCC 12 flags the extracts of _mm512_reduce_max_epi32 and of a cast).
inline std::int32_t max_lane(__m512i v) noexcept {
  const __v16si x = reinterpret_cast<__v16si>(v);
  const auto lo = reinterpret_cast<__m256i>(__builtin_shufflevector(x, x, 0, 1, 2, 3, 4, 5, 6, 7));
  const auto hi = reinterpret_cast<__m256i>(__builtin_shufflevector(x, x, 8, 9, 10, 11, 12, 13, 14, 15));
  const __m256i h = _mm256_max_epi32(lo, hi);
  __m128i q = _mm_max_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
  q = _mm_max_epi32(q, _mm_shuffle_epi32(q, 0x4e));
  return _mm_cvtsi128_si32(_mm_max_epi32(q, _mm_shuffle_epi32(q, 0xb1)));
}

// The first n of 16 lanes (all where n >= 16).
inline __mmask16 first(std::size_t n) noexcept { return n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1u); }

// f(whole, j, m) for the vectors of 16 lanes of n: the whole ones (whole: std::true_type, m all
// lanes; their loads plain), then the last part (std::false_type, m its lanes: masked loads, which
// cost a second micro-op on Intel's cores).
template <class F>
inline void vectors(std::size_t n, F&& f) noexcept {
  std::size_t j = 0;
  for (; j + 16 <= n; j += 16) f(std::true_type{}, j, __mmask16(0xffff));
  if (j < n) f(std::false_type{}, j, first(n - j));
}

// 16 int8 at p as int32 lanes (where not Whole, those of m; 0 in the others).
template <class Whole>
inline __m512i load_s8(Whole, const std::int8_t* p, __mmask16 m) noexcept {
  if constexpr (Whole::value)
    return _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  else
    return _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, p));
}

// The n <= 4 bytes at p as a dword, the rest 0 (nothing past p + n read); + 128 per byte read
// where Offset (the bytes past n stay 0: they add nothing to a product).
template <bool Offset>
inline std::int32_t dword(const std::int8_t* p, std::size_t n = 4) noexcept {
  std::uint32_t v = 0;
  std::memcpy(&v, p, n);
  if constexpr (Offset) v ^= 0x80808080u >> (8 * (4 - n));
  return static_cast<std::int32_t>(v);
}

// Four channels' 16 lanes saturated to int8 and interleaved: dword i is lane i of c0 .. c3.
inline __m512i interleave4(__m512i c0, __m512i c1, __m512i c2, __m512i c3) noexcept {
  const __m128i b0 = _mm512_maskz_cvtsepi32_epi8(0xffff, c0), b1 = _mm512_maskz_cvtsepi32_epi8(0xffff, c1);
  const __m128i b2 = _mm512_maskz_cvtsepi32_epi8(0xffff, c2), b3 = _mm512_maskz_cvtsepi32_epi8(0xffff, c3);
  const __m128i lo01 = _mm_unpacklo_epi8(b0, b1), hi01 = _mm_unpackhi_epi8(b0, b1);
  const __m128i lo23 = _mm_unpacklo_epi8(b2, b3), hi23 = _mm_unpackhi_epi8(b2, b3);
  __m512i z = _mm512_zextsi128_si512(_mm_unpacklo_epi16(lo01, lo23));
  z = _mm512_inserti32x4(z, _mm_unpackhi_epi16(lo01, lo23), 1);
  z = _mm512_inserti32x4(z, _mm_unpacklo_epi16(hi01, hi23), 2);
  return _mm512_inserti32x4(z, _mm_unpackhi_epi16(hi01, hi23), 3);
}
inline __m512i offset(__m512i v) noexcept { return _mm512_xor_si512(v, _mm512_set1_epi8(-128)); }  // + 128

// Where a projection's outputs go: by 4 (group: bytes between groups), + 128 or not; as rows of
// one channel each (V^T: channel c's row at y + c * ld); or rows of the caller (row i at y + i * ld).
enum class Kind { by4, by4_offset, channel_rows, rows };
struct Dest {
  std::int8_t* y;
  std::size_t ld;
  Kind kind;
};

// Rows i0 .. i0 + n - 1 (n <= 64) of one projection's input, by 4: group g's 16 rows of vector v at
// p + g * group + 64 v, + 128.
struct By4 {
  const std::int8_t* p;
  std::size_t group;
};

// Rows i0 .. i0 + n - 1 of x (`in` int8 each), + 128, by 4 into p ([round_up4(in) / 4][64][4]): 16
// rows' dwords a gather, a row's last part of a dword (nothing past it read) one at a time.
inline By4 pack_rows(std::size_t n, std::size_t in, Rows<const std::int8_t> x, std::size_t i0, std::int8_t* p) noexcept {
  constexpr std::size_t group = mha_s8_pack_rows * 4;
  const bool gathers = x.ld < (std::size_t(1) << 31) / 16;  // 16 rows' offsets in int32
  const __m512i offsets = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                             _mm512_set1_epi32(std::int32_t(gathers ? x.ld : 0)));
  for (std::size_t r0 = 0; r0 < n; r0 += 16) {
    const __mmask16 m = first(n - r0);
    const std::int8_t* rows = x.p + (i0 + r0) * x.ld;
    std::size_t k = 0;
    if (gathers)
      for (; k + 4 <= in; k += 4) {
        const __m512i v = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, offsets, rows + k, 1);
        _mm512_mask_storeu_epi32(p + k / 4 * group + r0 * 4, m, offset(v));
      }
    for (std::size_t r = r0; r < n && r < r0 + 16; ++r)
      for (std::size_t j = k; j < in; j += 4) {
        const std::int32_t v = dword<true>(x.p + (i0 + r) * x.ld + j, in - j < 4 ? in - j : 4);
        std::memcpy(p + j / 4 * group + r * 4, &v, 4);
      }
  }
  return {p, group};
}

// corr[o] = bias[o] - 128 sum_k w[o][k] for o < out (modulo 2^32): what turns sum_k w (x + 128)
// back into sum_k w x + bias.
inline void corrections(std::size_t out, std::size_t in, const ProjectionS8& p, std::int32_t* corr) noexcept {
  const __m512i ones = _mm512_set1_epi8(1);
  for (std::size_t o = 0; o < out; ++o) {
    const std::int8_t* w = p.weight.data + o * in;
    __m512i s = _mm512_setzero_si512();
    std::size_t k = 0;
    for (; k + 64 <= in; k += 64) s = madd(s, ones, _mm512_loadu_si512(w + k));
    if (k < in) s = madd(s, ones, _mm512_maskz_loadu_epi8((__mmask64(1) << (in - k)) - 1, w + k));
    const std::uint32_t bias = p.bias.data ? std::uint32_t(p.bias.data[o]) : 0u;
    corr[o] = static_cast<std::int32_t>(bias - 128u * std::uint32_t(DotS8::sum(s)));
  }
}

// acc[c][v] += (x + 128) . w[c] over one group of four (n <= 4 bytes of each weight row at w + k,
// rows `in` apart; x's group at xg; where Tail, m is the rows of the last vector that exist, and
// its load is masked: the others are whole, and their loads plain, about a tenth faster). Always
// inlined, its loops unrolled: acc stays in registers.
template <std::size_t C, std::size_t NV, bool Tail>
__attribute__((always_inline)) inline void project_step(__m512i (&acc)[C][NV], const std::int8_t* xg,
                                                        __mmask16 m, const std::int8_t* w, std::size_t in,
                                                        std::size_t k, std::size_t n) noexcept {
  __m512i xv[NV];
#pragma GCC unroll 4
  for (std::size_t v = 0; v < NV; ++v)
    xv[v] = Tail && v == NV - 1 ? _mm512_maskz_loadu_epi32(m, xg + 64 * v) : _mm512_loadu_si512(xg + 64 * v);
#pragma GCC unroll 4
  for (std::size_t c = 0; c < C; ++c) {
    const std::int8_t* wk = w + c * in + k;
    const __m512i b = _mm512_set1_epi32(n == 4 ? dword<false>(wk) : dword<false>(wk, n));
#pragma GCC unroll 4
    for (std::size_t v = 0; v < NV; ++v) acc[c][v] = madd(acc[c][v], xv[v], b);
  }
}

// Channels o .. o + C - 1 of one block of NV vectors of rows (n rows from i0; where Tail, m: the
// last vector's rows that exist): acc[c][v] = sum_k w[c][k] (x + 128), requantized (channel o + c's multiplier
// and corr) to d. One function, its accumulators never passed by reference: GCC 12 keeps such an
// array in memory otherwise, storing it every step.
template <std::size_t C, std::size_t NV, bool Tail>
inline void project_block(std::size_t in, By4 x, __mmask16 m, std::size_t n, const ProjectionS8& p,
                          const std::int32_t* corr, std::int32_t zero_point, const Dest& d, std::size_t o,
                          std::size_t i0) noexcept {
  const std::int8_t* w = p.weight.data + o * in;
  __m512i acc[C][NV];
#pragma GCC unroll 16
  for (std::size_t c = 0; c < C; ++c)
#pragma GCC unroll 4
    for (std::size_t v = 0; v < NV; ++v) acc[c][v] = _mm512_setzero_si512();
  const std::int8_t* xg = x.p;
  std::size_t k = 0;
  for (; k + 4 <= in; k += 4, xg += x.group) project_step<C, NV, Tail>(acc, xg, m, w, in, k, 4);
  if (k < in) project_step<C, NV, Tail>(acc, xg, m, w, in, k, in - k);
  const __m512i zp = L::splat(zero_point);
#pragma GCC unroll 4
  for (std::size_t c = 0; c < C; ++c) {
    L::Multipliers q{};  // value-initialized first: GCC 12 calls the copied vectors uninitialized
    q = L::broadcast(p.multiplier.data[o + c]);
    const __m512i add = L::splat(corr[o + c]);
#pragma GCC unroll 4
    for (std::size_t v = 0; v < NV; ++v) acc[c][v] = L::apply(L::add(acc[c][v], add), q, zp);
  }
#pragma GCC unroll 4
  for (std::size_t v = 0; v < NV; ++v) {
    const std::size_t i = i0 + 16 * v, rows = n - 16 * v < 16 ? n - 16 * v : 16;
    if constexpr (C == 4) {
      if (d.kind == Kind::by4 || d.kind == Kind::by4_offset) {
        const __m512i z = interleave4(acc[0][v], acc[1][v], acc[2][v], acc[3][v]);
        _mm512_mask_storeu_epi32(d.y + o / 4 * d.ld + i * 4, first(rows), d.kind == Kind::by4 ? z : offset(z));
        continue;
      }
      if (d.kind == Kind::rows) {
        alignas(64) std::int32_t t[16];
        _mm512_store_si512(t, interleave4(acc[0][v], acc[1][v], acc[2][v], acc[3][v]));
        for (std::size_t r = 0; r < rows; ++r) std::memcpy(d.y + (i + r) * d.ld + o, t + r, 4);
        continue;
      }
    }
#pragma GCC unroll 4
    for (std::size_t c = 0; c < C; ++c) {
      if (d.kind == Kind::channel_rows)
        L::store_part(acc[c][v], d.y + (o + c) * d.ld + i, 1, rows);
      else  // Kind::rows, a last block of fewer than four channels
        L::store_part(acc[c][v], d.y + i * d.ld + o + c, d.ld, rows);
    }
  }
}

// Every output channel of one block of NV vectors of rows (n rows from i0; Tail: n < 16 NV).
template <std::size_t NV, bool Tail>
inline void project_rows(std::size_t in, std::size_t out, By4 x, std::size_t n, const ProjectionS8& p,
                         const std::int32_t* corr, std::int32_t zero_point, const Dest& d, std::size_t i0) noexcept {
  const __mmask16 m = first(n - 16 * (NV - 1));
  std::size_t o = 0;
  for (; o + 4 <= out; o += 4) project_block<4, NV, Tail>(in, x, m, n, p, corr, zero_point, d, o, i0);
  for (; o < out; ++o) project_block<1, NV, Tail>(in, x, m, n, p, corr, zero_point, d, o, i0);
}
template <std::size_t NV>
inline void project_rows(std::size_t in, std::size_t out, By4 x, std::size_t n, const ProjectionS8& p,
                         const std::int32_t* corr, std::int32_t zero_point, const Dest& d, std::size_t i0) noexcept {
  if (n % 16)
    project_rows<NV, true>(in, out, x, n, p, corr, zero_point, d, i0);
  else
    project_rows<NV, false>(in, out, x, n, p, corr, zero_point, d, i0);
}

// FULLY_CONNECTED of m rows of `in` into `out` channels, to d; rows(i0, n) gives rows i0 .. i0 + n - 1
// (n <= 64) by 4; corr: [out] of scratch.
template <class RowsBy4>
void project(std::size_t m, std::size_t in, std::size_t out, const ProjectionS8& p, std::int32_t zero_point,
             std::int32_t* corr, const Dest& d, RowsBy4&& rows) noexcept {
  corrections(out, in, p, corr);
  for (std::size_t i0 = 0; i0 < m; i0 += mha_s8_pack_rows) {
    const std::size_t n = m - i0 < mha_s8_pack_rows ? m - i0 : mha_s8_pack_rows;
    const By4 x = rows(i0, n);
    switch ((n + 15) / 16) {
      case 1: project_rows<1>(in, out, x, n, p, corr, zero_point, d, i0); break;
      case 2: project_rows<2>(in, out, x, n, p, corr, zero_point, d, i0); break;
      case 3: project_rows<3>(in, out, x, n, p, corr, zero_point, d, i0); break;
      default: project_rows<4>(in, out, x, n, p, corr, zero_point, d, i0); break;
    }
  }
}

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
// accumulators local, C x NV of them: enough independent chains to cover VPDPBUSD's latency.
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

// One sequence's pass (b of the batch) in the arena's buffers.
inline void sequence(const MhaDims& d, const MhaS8Weights& w, const SoftmaxS8Table& table, const AttentionShape& sh,
              Span<const std::int8_t> query, Span<const std::int8_t> key, Span<const std::int8_t> value,
              Span<std::int8_t> out, const ForwardOptionsS8& o, const MhaS8Buffers& buf, std::size_t b) noexcept {
  const std::size_t sq = sh.seq_q, skv = sh.seq_kv, dk = d.d_k(), kv = d.kv_dim(), q_dim = d.q_dim();
  const auto packed = [&](const std::int8_t* x, std::size_t seq, std::size_t in) {  // rows packed here
    const Rows<const std::int8_t> rows = rows_of(x, sh, b, seq, in);
    return [rows, in, to = buf.packed](std::size_t i0, std::size_t n) { return pack_rows(n, in, rows, i0, to); };
  };
  project(sq, d.d_model, q_dim, w.q, w.zero_point_q, buf.sums, Dest{buf.q, sq * 4, Kind::by4_offset},
          packed(query.data, sq, d.d_model));
  project(skv, d.kdim, kv, w.k, w.zero_point_k, buf.sums, Dest{buf.k, skv * 4, Kind::by4}, packed(key.data, skv, d.kdim));
  project(skv, d.vdim, kv, w.v, w.zero_point_v, buf.sums, Dest{buf.vt, skv, Kind::channel_rows},
          packed(value.data, skv, d.vdim));
  for (std::size_t g = 0; g < d.kv_heads; ++g)
    key_terms(skv, dk, buf.k + g * dk * skv, w.zero_point_q, buf.k_sums + g * skv);
  for (std::size_t h = 0; h < d.heads; ++h) {
    const std::size_t g = h / d.group();
    const Attend a{dk, sq, skv, buf.q + h * dk * sq, buf.k + g * dk * skv, buf.vt + g * dk * skv, buf.k_sums + g * skv, &w};
    for (std::size_t i0 = 0; i0 < sq; i0 += mha_s8_pack_queries) {
      const std::size_t block = sq - i0 < mha_s8_pack_queries ? sq - i0 : mha_s8_pack_queries;
      std::int32_t q_terms[mha_s8_pack_queries];
      query_terms(a, i0, q_terms);
      for (std::size_t i = i0; i < i0 + block; i += 4) {
        const std::size_t rows = i0 + block - i < 4 ? i0 + block - i : 4;
        scores(a, i, rows, q_terms + (i - i0), keys_used(o.masks, skv, i + rows - 1), buf.p);
        std::size_t used[4];
        for (std::size_t r = 0; r < rows; ++r) used[r] = keys_used(o.masks, skv, i + r);
        if (!key_masks(o.masks)) softmax_rows(rows, used, buf.p, skv, table, buf.p, buf.sums);  // in place
        for (std::size_t r = 0; r < rows; ++r) {
          std::int8_t* p_out =
              o.attn_weights.data ? o.attn_weights.data + ((b * d.heads + h) * sq + i + r) * skv : nullptr;
          std::int8_t* row = buf.p + r * skv;  // its scores, then in place its probabilities
          row_probabilities(d, sh, o.masks, b, h, i + r, used[r], row, buf.probs, buf.keep, std::int8_t(INT8_MIN), row,
                            p_out, [&](std::size_t n, const std::int8_t* x, std::int8_t* y) {
                              if (key_masks(o.masks)) softmax_rows(1, &n, x, n, table, y, buf.sums);
                            });  // without key masks softmax_rows has made them, four rows at once
        }
        store_probabilities(skv, buf.p, rows, i - i0, buf.packed);
      }
      context(a, buf.packed, i0, block, h, buf.context);
    }
  }
  const Rows<std::int8_t> y = rows_of(out.data, sh, b, sq, d.d_model);
  project(sq, q_dim, d.d_model, w.out, w.zero_point_out, buf.sums, Dest{y.p, y.ld, Kind::rows},
          [&](std::size_t i0, std::size_t) { return By4{buf.context + i0 * 4, sq * 4}; });
}

inline constexpr bool available = true;

}  // namespace vnni
}  // namespace EMHA_ISA
}  // namespace emha::detail

#else  // no VNNI in this variant: the general pass runs

namespace emha::detail {
inline namespace EMHA_ISA {
namespace vnni {
inline constexpr bool available = false;
template <class... A>
void sequence(const A&...) noexcept {}  // never called: mha_s8_core.cpp tests available
}  // namespace vnni
}  // namespace EMHA_ISA
}  // namespace emha::detail

#endif

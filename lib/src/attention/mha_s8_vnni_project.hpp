// SPDX-License-Identifier: Apache-2.0
#pragma once
// The VNNI pass's projections (mha_s8_vnni.hpp, steps 1 and 4): the input + 128 packed by 4, 4
// output channels x 64 rows a block, requantized in registers to the layout the next step reads.

#include "simd_arch.hpp"
#if EMHA_SIMD && defined(__AVX512VNNI__) && defined(__AVX512BW__)
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "attention/integer_pass.hpp"
#include "attention/mha_s8_vnni_lanes.hpp"
#include "emha/detail/mha_s8_plan.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {
namespace vnni {

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

}  // namespace vnni
}  // namespace EMHA_ISA
}  // namespace emha::detail

#endif

// SPDX-License-Identifier: Apache-2.0
#pragma once
// The VNNI pass's lanes (mha_s8_vnni.hpp): VPDPBUSD, 16-lane helpers, and dwords of the layout
// "by 4".

#include "simd_arch.hpp"
#if EMHA_SIMD && defined(__AVX512VNNI__) && defined(__AVX512BW__)
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

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

}  // namespace vnni
}  // namespace EMHA_ISA
}  // namespace emha::detail

#endif

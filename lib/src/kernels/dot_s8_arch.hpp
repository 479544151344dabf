// SPDX-License-Identifier: Apache-2.0
#pragma once
// The int8 dot product of one instruction set, as the steps gemm_s8 (gemm_s8.cpp) strings
// together: `step` int8 pairs per madd, int32 sums exact (no saturating instruction anywhere).
//   DotS8::load(p)        `step` int8 at p (any alignment) in the form madd takes
//   DotS8::madd(s, a, b)  s + the products a[i] * b[i], pairwise into int32 lanes
//   DotS8::sum(s)         the lanes' total
//   DotS8::load_part(p, n) the first n < step int8 at p, the rest 0, nothing past p + n read (where
//                         the target masks loads: AVX-512; elsewhere absent, and k's tail is a
//                         scalar loop); with offset, offset_of(v) is v + 128
//   DotS8::offset         true where madd's first operand is unsigned (VNNI): b is loaded by
//                         load_offset as b + 128, and 128 * sum(a) = madd(0, unit(), a), once per
//                         row of a, is subtracted from each total (exact modulo 2^32, so exact);
//                         false elsewhere (no load_offset, no unit)
//   DotS8::rows           rows of a gemm_s8 blocks together (4 with AVX-512's 32 vector registers,
//                         2 where the registers hold 2 x 4 accumulators and the operands, 2 x 2
//                         on Cortex-M4/M7, 2 x 3 (and 2 x 4) on Helium; 1 on the scalar path)
//   DotS8::cols           rows of b a block of several rows of a takes (4 where absent; 2 on
//                         Cortex-M4/M7, whose 14 core registers hold 2 x 2 sums, 3 pointers and 4
//                         operands; 3 on Helium, whose VMLADAVA sums into even core registers: 6
//                         sums and 5 pointers, or 8 and 6 with lr and r7 as well, where
//                         blocks_2x4 takes them)
//   DotS8::sum4(s, t)     t[j] = sum(s[j]) for j < 4, where one reduction of four is cheaper than
//                         four (x86: VPHADDD; aarch64: ADDP); absent elsewhere (gemm_s8 then calls
//                         sum four times)
// One struct per target, chosen by the compiler's feature macros:
//   x86 AVX-512 VNNI              VPDPBUSD on 512-bit vectors (64 per step, k's tail a masked
//                                 load): unsigned x signed, so b is offset to b + 128 (XOR 0x80)
//                                 and 128 * sum(a) subtracted
//   x86 AVX-VNNI (no AVX-512)     the same on 256-bit vectors (32 per step, k's tail scalar)
//   x86 AVX-512BW / AVX2 / SSE2   sign-extend to int16, VPMADDWD (32 / 16 / 8 per step)
//   aarch64 with +dotprod         SDOT (Cortex-A55, A76: 16 per step)
//   aarch64, armv7 NEON           SMULL/VMULL.S8 to int16, SADALP/VPADAL.S16 (16 per step; two
//                                 int8 products can overflow int16, one cannot)
//   Cortex-M55 (Helium)           VMLADAVA.S8 into one int32 (16 per step), 2 x 4 blocks up to
//                                 16 steps, else 2 x 3, their loops in asm: dot_s8_mve.hpp
//   Cortex-M4/M7, armv6 (DSP)     SXTB16 (and with ROR #8) + SMLAD, two pairs per instruction,
//                                 2 x 2 blocks, a's two rows widened once for all of b's
//                                 (widen_2), the blocks' loop in asm (blocks_2x2); 4 to 6 rows
//                                 widened into gemm_s8_staged's stage: dot_s8_dsp.hpp
//   others (EMHA_SIMD=0)          one pair per step

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "simd_arch.hpp"

#if EMHA_SIMD && defined(__SSE2__)
#include <immintrin.h>
#elif EMHA_SIMD && (defined(__ARM_NEON) || defined(__ARM_NEON__))
#include <arm_neon.h>
#elif EMHA_SIMD && defined(EMHA_SIMD_MVE)
#include "kernels/dot_s8_mve.hpp"
#elif EMHA_SIMD && defined(__ARM_FEATURE_DSP)
#include "kernels/dot_s8_dsp.hpp"
#endif

namespace emha::detail {
inline namespace EMHA_ISA {

#if EMHA_SIMD && defined(__AVX2__)
// The total of 8 int32 lanes.
inline std::int32_t sum_epi32(__m256i s) noexcept {
  __m128i q = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
  q = _mm_add_epi32(q, _mm_shuffle_epi32(q, 0x4e));
  q = _mm_add_epi32(q, _mm_shuffle_epi32(q, 0xb1));
  return _mm_cvtsi128_si32(q);
}

// t[j] = the total of s[j]'s 8 int32 lanes, j < 4: three VPHADDD and one add of halves for the
// four (modulo 2^32, as every sum here).
inline void sum4_epi32(const __m256i* s, std::int32_t* t) noexcept {
  const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(s[0], s[1]), _mm256_hadd_epi32(s[2], s[3]));
  const __m128i q = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(t), q);
}
#endif

#if EMHA_SIMD && defined(__AVX512BW__)
// 16 int32 lanes added in two halves of 8.
inline __m256i halves_epi32(__m512i s) noexcept {  // __builtin_shufflevector: GCC 12 flags the
  const __v16si v = reinterpret_cast<__v16si>(s);   // extract of _mm512_reduce_add_epi32 (-Werror)
  const auto lo = reinterpret_cast<__m256i>(__builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7));
  const auto hi = reinterpret_cast<__m256i>(__builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15));
  return _mm256_add_epi32(lo, hi);
}

#endif


#if EMHA_SIMD && defined(__AVX512VNNI__) && defined(__AVX512BW__)
struct DotS8 {  // 512 bits (Zen 4 splits them in two: the same rate as 256; full width on Intel, Zen 5)
  static constexpr std::size_t rows = 4;  // 16 accumulators, 4 rows of a and b's vector: 21 of 32 registers
  static constexpr std::size_t step = 64;
  static constexpr bool offset = true;
  using in = __m512i;
  using acc = __m512i;
  static acc zero() noexcept { return _mm512_setzero_si512(); }
  static in load(const std::int8_t* p) noexcept { return _mm512_loadu_si512(p); }
  // The first n < 64 of p, the rest 0 (a masked load: nothing past p + n is read). A zero of a
  // adds nothing to a product or to 128 * sum(a), so k's tail needs no scalar loop.
  static in load_part(const std::int8_t* p, std::size_t n) noexcept {
    return _mm512_maskz_loadu_epi8((__mmask64(1) << n) - 1, p);
  }
  static in unit() noexcept { return _mm512_set1_epi8(char(0x80)); }  // 128 as unsigned
  static in offset_of(in b) noexcept { return _mm512_xor_si512(b, unit()); }  // b + 128
  static in load_offset(const std::int8_t* p) noexcept { return offset_of(load(p)); }
  static acc madd(acc s, in u, in b) noexcept {  // u unsigned; asm: GCC 12 copies the intrinsic's
    __asm__("vpdpbusd %2, %1, %0" : "+v"(s) : "v"(u), "v"(b));  // accumulator to a new register every step
    return s;
  }
  static std::int32_t sum(acc s) noexcept { return sum_epi32(halves_epi32(s)); }
  static void sum4(const acc* s, std::int32_t* t) noexcept {
    const __m256i h[4] = {halves_epi32(s[0]), halves_epi32(s[1]), halves_epi32(s[2]), halves_epi32(s[3])};
    sum4_epi32(h, t);
  }
};
#elif EMHA_SIMD && defined(__AVX512BW__)
struct DotS8 {
  static constexpr std::size_t rows = 2;
  static constexpr std::size_t step = 32;
  static constexpr bool offset = false;
  using in = __m512i;
  using acc = __m512i;
  static acc zero() noexcept { return _mm512_setzero_si512(); }
  static in load(const std::int8_t* p) noexcept { return _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static acc madd(acc s, in a, in b) noexcept { return _mm512_add_epi32(s, _mm512_madd_epi16(a, b)); }
  static std::int32_t sum(acc s) noexcept { return sum_epi32(halves_epi32(s)); }
};
#elif EMHA_SIMD && defined(__AVXVNNI__) && defined(__AVX2__)
struct DotS8 {  // AVX-VNNI: the AVX-512 VNNI struct's arithmetic on 256 bits, VEX-encoded
  static constexpr std::size_t rows = 2;  // 2 x 4 accumulators, 2 rows of a and b's vector: 11 of 16 registers
  static constexpr std::size_t step = 32;
  static constexpr bool offset = true;
  using in = __m256i;
  using acc = __m256i;
  static acc zero() noexcept { return _mm256_setzero_si256(); }
  static in load(const std::int8_t* p) noexcept { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static in unit() noexcept { return _mm256_set1_epi8(char(0x80)); }  // 128 as unsigned
  static in offset_of(in b) noexcept { return _mm256_xor_si256(b, unit()); }  // b + 128
  static in load_offset(const std::int8_t* p) noexcept { return offset_of(load(p)); }
  static acc madd(acc s, in u, in b) noexcept {  // u unsigned; asm, as the AVX-512 struct's
    __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(s) : "x"(u), "x"(b));
    return s;
  }
  static std::int32_t sum(acc s) noexcept { return sum_epi32(s); }
  static void sum4(const acc* s, std::int32_t* t) noexcept { sum4_epi32(s, t); }
};
#elif EMHA_SIMD && defined(__AVX2__)
struct DotS8 {
  static constexpr std::size_t rows = 2;
  static constexpr std::size_t step = 16;
  static constexpr bool offset = false;
  using in = __m256i;
  using acc = __m256i;
  static acc zero() noexcept { return _mm256_setzero_si256(); }
  static in load(const std::int8_t* p) noexcept { return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static acc madd(acc s, in a, in b) noexcept { return _mm256_add_epi32(s, _mm256_madd_epi16(a, b)); }
  static std::int32_t sum(acc s) noexcept { return sum_epi32(s); }
  static void sum4(const acc* s, std::int32_t* t) noexcept { sum4_epi32(s, t); }
};
#elif EMHA_SIMD && defined(__SSE2__)
struct DotS8 {
  static constexpr std::size_t rows = 2;
  static constexpr std::size_t step = 8;
  static constexpr bool offset = false;
  using in = __m128i;
  using acc = __m128i;
  static acc zero() noexcept { return _mm_setzero_si128(); }
  static in load(const std::int8_t* p) noexcept {  // 8 bytes, each doubled, then >> 8 signed
    const __m128i x = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    return _mm_srai_epi16(_mm_unpacklo_epi8(x, x), 8);
  }
  static acc madd(acc s, in a, in b) noexcept { return _mm_add_epi32(s, _mm_madd_epi16(a, b)); }
  static std::int32_t sum(acc s) noexcept {
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
  }
};
#elif EMHA_SIMD && (defined(__ARM_NEON) || defined(__ARM_NEON__))
struct DotS8 {
  static constexpr std::size_t rows = 2;
  static constexpr std::size_t step = 16;
  static constexpr bool offset = false;
  using in = int8x16_t;
  using acc = int32x4_t;
  static acc zero() noexcept { return vdupq_n_s32(0); }
  static in load(const std::int8_t* p) noexcept { return vld1q_s8(p); }
#if defined(__ARM_FEATURE_DOTPROD)
  static acc madd(acc s, in a, in b) noexcept { return vdotq_s32(s, a, b); }
#else
  static acc madd(acc s, in a, in b) noexcept {
    s = vpadalq_s16(s, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
    return vpadalq_s16(s, vmull_s8(vget_high_s8(a), vget_high_s8(b)));
  }
#endif
#if defined(__aarch64__)
  static std::int32_t sum(acc s) noexcept { return vaddvq_s32(s); }
  static void sum4(const acc* s, std::int32_t* t) noexcept {  // three ADDP for the four
    vst1q_s32(t, vpaddq_s32(vpaddq_s32(s[0], s[1]), vpaddq_s32(s[2], s[3])));
  }
#else
  static std::int32_t sum(acc s) noexcept {
    const int32x2_t h = vadd_s32(vget_low_s32(s), vget_high_s32(s));
    return vget_lane_s32(vpadd_s32(h, h), 0);
  }
#endif
};
#elif EMHA_SIMD && (defined(EMHA_SIMD_MVE) || defined(__ARM_FEATURE_DSP))
// DotS8 in dot_s8_mve.hpp (Helium) or dot_s8_dsp.hpp (the DSP extension), included above
#else
struct DotS8 {
  static constexpr std::size_t rows = 1;
  static constexpr std::size_t step = 1;
  static constexpr bool offset = false;
  using in = std::int32_t;
  using acc = std::int32_t;
  static acc zero() noexcept { return 0; }
  static in load(const std::int8_t* p) noexcept { return *p; }
  static acc madd(acc s, in a, in b) noexcept { return s + a * b; }
  static std::int32_t sum(acc s) noexcept { return s; }
};
#endif

}  // namespace EMHA_ISA
}  // namespace emha::detail

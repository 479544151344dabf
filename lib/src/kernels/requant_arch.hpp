// SPDX-License-Identifier: Apache-2.0
#pragma once
// Double-rounding requantization of a vector of int32 lanes for requantize_s8 (requantize_s8.cpp):
//   NEON (aarch64, armv7) and Helium, 4 lanes: x << max(shift, 0); VQRDMULH by the multiplier
//   (gemmlowp's SaturatingRoundingDoublingHighMul, which is that instruction); the rounding
//   divide by 2^max(-shift, 0) as gemmlowp's NEON one (x - 1 where x < 0 and the shift is not 0,
//   saturating, then VRSHL: half away from zero); + zero point, clamped to int8.
//   x86 AVX2, 8 lanes (AVX-512: 16, its lane tests masks): the reference's steps per lane, the
//   64-bit products from VPMULDQ on even and odd lanes (the multipliers are >= 0: set_weights and
//   the kernel's contract keep them in [0, 2^31), so the product never saturates).
// The steps, per target (requantize_s8.cpp strings them together, multipliers split once per
// tensor or loaded per vector of channels):
//   RequantLanes::load(p), add(a, b), splat(v)   int32 lanes; add modulo 2^32
//   RequantLanes::broadcast(q), pairs(q)         one multiplier for every lane; q[0 .. lanes-1]
//   RequantLanes::apply(x, q, zero_point)        the lanes' outputs, int8 once store narrows them
//   RequantLanes::store(v, y, ldy)               the lanes to y[i * ldy], saturated to int8
//   RequantLanes::load_part, pairs_part, store_part  the same for the first n < lanes, by masks
//                                                (AVX-512; absent elsewhere: the scalar loop)
// RequantLanes::lanes is 0 elsewhere (SSE2, Cortex-M4/M7, armv6: the scalar loop runs).

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "emha/kernels/requant.hpp"
#include "simd_arch.hpp"

#if EMHA_SIMD && defined(__AVX2__)
#include <immintrin.h>
#elif EMHA_SIMD && (defined(__ARM_NEON) || defined(__ARM_NEON__))
#include <arm_neon.h>
#elif EMHA_SIMD && defined(EMHA_SIMD_MVE)
#include <arm_mve.h>
#endif
#if defined(__ARM_FEATURE_SAT) && !defined(__aarch64__)
#include <arm_acle.h>
#endif

namespace emha::detail {
inline namespace EMHA_ISA {

#if EMHA_SIMD && defined(__AVX512BW__)
struct RequantLanes {  // the AVX2 steps below on 16 lanes, the lane tests as masks
  static constexpr std::size_t lanes = 16;
  using vec = __m512i;
  struct Multipliers {
    // per lane: the multiplier, its odd lanes' in the even (VPMULDQ reads those), max(shift, 0),
    // max(-shift, 0), and the rounding divide's remainder mask 2^right - 1 and its half
    __m512i m, m_odd, left, right, mask, half;
  };
  static vec load(const std::int32_t* p) noexcept { return _mm512_loadu_si512(p); }
  static vec add(vec a, vec b) noexcept { return _mm512_add_epi32(a, b); }  // modulo 2^32, as the reference
  static vec splat(std::int32_t v) noexcept { return _mm512_set1_epi32(v); }
  // The shifts, min, max and products below take all-lanes masks in their maskz forms: GCC 12
  // calls the unmasked forms' undefined pass-through operand uninitialized where they inline.
  static constexpr __mmask16 all = 0xffff;
  static constexpr __mmask8 all8 = 0xff;
  static Multipliers split(__m512i m, __m512i shift) noexcept {
    const __m512i zero = _mm512_setzero_si512(), one = _mm512_set1_epi32(1);
    const __m512i right = _mm512_sub_epi32(zero, _mm512_maskz_min_epi32(all, shift, zero));
    const __m512i mask = _mm512_sub_epi32(_mm512_maskz_sllv_epi32(all, one, right), one);
    return {m, _mm512_maskz_srli_epi64(all8, m, 32), _mm512_maskz_max_epi32(all, shift, zero), right, mask,
            _mm512_maskz_srai_epi32(all, mask, 1)};
  }
  static Multipliers broadcast(QuantizedMultiplier q) noexcept { return split(splat(q.multiplier), splat(q.shift)); }
  // q[0..15]'s {multiplier, shift} pairs: the even and the odd int32 of two vectors.
  static Multipliers pairs(const QuantizedMultiplier* q) noexcept {
    return deinterleave(_mm512_loadu_si512(q), _mm512_loadu_si512(q + 8));
  }
  static Multipliers deinterleave(__m512i a, __m512i b) noexcept {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    return split(_mm512_permutex2var_epi32(a, even, b), _mm512_permutex2var_epi32(a, odd, b));
  }
  // requantize(x, q) + zero_point per lane (double rounding; store saturates to int8).
  static vec apply(vec x, const Multipliers& q, vec zero_point) noexcept {
    const __m512i zero = _mm512_setzero_si512(), one = _mm512_set1_epi32(1);
    x = _mm512_maskz_sllv_epi32(all, x, q.left);  // modulo 2^32, as the reference
    // (x * m + 2^30) >> 31 per lane, bits 31..62 of the 64-bit sum: from the even lanes' products
    // shifted right 31, the odd lanes' shifted left 1 (their high half).
    const __m512i nudge = _mm512_set1_epi64(std::int64_t(1) << 30);
    const __m512i even = _mm512_maskz_srli_epi64(all8, _mm512_add_epi64(_mm512_maskz_mul_epi32(all8, x, q.m), nudge), 31);
    const __m512i odd = _mm512_maskz_slli_epi64(
        all8, _mm512_add_epi64(_mm512_maskz_mul_epi32(all8, _mm512_maskz_srli_epi64(all8, x, 32), q.m_odd), nudge), 1);
    x = _mm512_mask_blend_epi32(0xaaaa, even, odd);
    // round(x / 2^right), half away from zero: (x >> right) + (remainder > threshold).
    const __m512i threshold = _mm512_mask_add_epi32(q.half, _mm512_cmplt_epi32_mask(x, zero), q.half, one);
    const __m512i shifted = _mm512_maskz_srav_epi32(all, x, q.right);
    x = _mm512_mask_add_epi32(shifted, _mm512_cmpgt_epi32_mask(_mm512_and_si512(x, q.mask), threshold), shifted, one);
    return _mm512_add_epi32(x, zero_point);
  }
  // The first n of the 16 lanes saturated to int8 (VPMOVSDB) to y[i * ldy].
  static void store_part(__m512i v, std::int8_t* y, std::size_t ldy, std::size_t n) noexcept {
    if (ldy == 1) {
      _mm512_mask_cvtsepi32_storeu_epi8(y, first(n), v);
    } else {
      alignas(16) std::int8_t lane[16];  // maskz: GCC 12 flags the unmasked form's undefined source
      _mm_store_si128(reinterpret_cast<__m128i*>(lane), _mm512_maskz_cvtsepi32_epi8(0xffff, v));
      for (std::size_t i = 0; i < n; ++i) y[i * ldy] = lane[i];
    }
  }
  static void store(__m512i v, std::int8_t* y, std::size_t ldy) noexcept { store_part(v, y, ldy, lanes); }
  // A vector's last n < 16 lanes by masks: nothing past them read or written, the rest 0.
  static __mmask16 first(std::size_t n) noexcept { return __mmask16((1u << n) - 1u); }
  static vec load_part(const std::int32_t* p, std::size_t n) noexcept { return _mm512_maskz_loadu_epi32(first(n), p); }
  static Multipliers pairs_part(const QuantizedMultiplier* q, std::size_t n) noexcept {
    const __m512i a = _mm512_maskz_loadu_epi64(__mmask8(first(n < 8 ? n : 8)), q);
    const __m512i b = _mm512_maskz_loadu_epi64(__mmask8(first(n > 8 ? n - 8 : 0)), q + 8);
    return deinterleave(a, b);
  }
};
#elif EMHA_SIMD && defined(__AVX2__)
struct RequantLanes {
  static constexpr std::size_t lanes = 8;
  using vec = __m256i;
  struct Multipliers {
    __m256i m, left, right;  // per lane: the multiplier, max(shift, 0), max(-shift, 0)
  };
  static vec load(const std::int32_t* p) noexcept { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static vec add(vec a, vec b) noexcept { return _mm256_add_epi32(a, b); }  // modulo 2^32, as the reference
  static vec splat(std::int32_t v) noexcept { return _mm256_set1_epi32(v); }
  static Multipliers split(__m256i m, __m256i shift) noexcept {
    const __m256i zero = _mm256_setzero_si256();
    return {m, _mm256_max_epi32(shift, zero), _mm256_sub_epi32(zero, _mm256_min_epi32(shift, zero))};
  }
  static Multipliers broadcast(QuantizedMultiplier q) noexcept { return split(splat(q.multiplier), splat(q.shift)); }
  // q[0..7]'s {multiplier, shift} pairs: even and odd int32 of two vectors.
  static Multipliers pairs(const QuantizedMultiplier* q) noexcept {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 4));
    const __m256i order = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
    const __m256i pa = _mm256_permutevar8x32_epi32(a, order), pb = _mm256_permutevar8x32_epi32(b, order);
    return split(_mm256_permute2x128_si256(pa, pb, 0x20), _mm256_permute2x128_si256(pa, pb, 0x31));
  }
  // requantize(x, q) + zero_point per lane (double rounding; store saturates to int8).
  static vec apply(vec x, const Multipliers& q, vec zero_point) noexcept {
    const __m256i zero = _mm256_setzero_si256(), one = _mm256_set1_epi32(1);
    x = _mm256_sllv_epi32(x, q.left);  // modulo 2^32, as the reference
    // (x * m + 2^30) >> 31 per lane: bits 31..62 of the 64-bit sum, from even and odd lanes.
    const __m256i nudge = _mm256_set1_epi64x(std::int64_t(1) << 30);
    const __m256i even = _mm256_srli_epi64(_mm256_add_epi64(_mm256_mul_epi32(x, q.m), nudge), 31);
    const __m256i odd =
        _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), _mm256_srli_epi64(q.m, 32)), nudge);
    x = _mm256_blend_epi32(even, _mm256_slli_epi64(_mm256_srli_epi64(odd, 31), 32), 0xaa);
    // round(x / 2^right), half away from zero: (x >> right) + (remainder > threshold).
    const __m256i mask = _mm256_sub_epi32(_mm256_sllv_epi32(one, q.right), one);
    const __m256i remainder = _mm256_and_si256(x, mask);
    const __m256i threshold = _mm256_sub_epi32(_mm256_srai_epi32(mask, 1), _mm256_cmpgt_epi32(zero, x));
    x = _mm256_sub_epi32(_mm256_srav_epi32(x, q.right), _mm256_cmpgt_epi32(remainder, threshold));
    return _mm256_add_epi32(x, zero_point);
  }
  // The eight lanes saturated to int8 (two saturating packs keep their order) to y[i * ldy].
  static void store(__m256i v, std::int8_t* y, std::size_t ldy) noexcept {
    const __m128i h = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    const __m128i b = _mm_packs_epi16(h, h);
    if (ldy == 1) {
      _mm_storel_epi64(reinterpret_cast<__m128i*>(y), b);
    } else {
      alignas(16) std::int8_t lane[16];
      _mm_store_si128(reinterpret_cast<__m128i*>(lane), b);
      for (std::size_t i = 0; i < 8; ++i) y[i * ldy] = lane[i];
    }
  }
};
#elif EMHA_SIMD && ((defined(__ARM_NEON) || defined(__ARM_NEON__)) || defined(EMHA_SIMD_MVE))
struct RequantLanes {
  static constexpr std::size_t lanes = 4;
  using vec = int32x4_t;
  struct Multipliers {
    int32x4_t m, left, right_neg;  // per lane: the multiplier, max(shift, 0), min(shift, 0) = -right
  };
  static vec load(const std::int32_t* p) noexcept { return vld1q_s32(p); }
  static vec add(vec a, vec b) noexcept { return vaddq_s32(a, b); }  // modulo 2^32, as the reference
  static vec splat(std::int32_t v) noexcept { return vdupq_n_s32(v); }
  static Multipliers split(int32x4_t m, int32x4_t shift) noexcept {
    const int32x4_t zero = vdupq_n_s32(0);
    return {m, vmaxq_s32(shift, zero), vminq_s32(shift, zero)};
  }
  static Multipliers broadcast(QuantizedMultiplier q) noexcept { return split(splat(q.multiplier), splat(q.shift)); }
  static Multipliers pairs(const QuantizedMultiplier* q) noexcept {
    int32x4_t m, shift;
    load_pairs(reinterpret_cast<const std::int32_t*>(q), m, shift);
    return split(m, shift);
  }
  // requantize(x, q) + zero_point per lane (double rounding), clamped to [-128, 127].
  static vec apply(vec x, const Multipliers& q, vec zero_point) noexcept {
    x = vqrdmulhq_s32(vshlq_s32(x, q.left), q.m);
    const int32x4_t fixup = vshrq_n_s32(vandq_s32(x, q.right_neg), 31);
    x = vrshlq_s32(vqaddq_s32(x, fixup), q.right_neg);
    x = vaddq_s32(x, zero_point);
    return vminq_s32(vmaxq_s32(x, vdupq_n_s32(INT8_MIN)), vdupq_n_s32(INT8_MAX));
  }
  // Four {multiplier, shift} pairs at p, de-interleaved: VLD2 on NEON; two gathers on Helium,
  // where GCC 12 gives VLD2's post-increment a register step the assembler refuses.
#if defined(EMHA_SIMD_MVE)
  static void load_pairs(const std::int32_t* p, int32x4_t& m, int32x4_t& shift) noexcept {
    const uint32x4_t even = vidupq_n_u32(0, 2);  // elements 0, 2, 4, 6
    m = vldrwq_gather_shifted_offset_s32(p, even);
    shift = vldrwq_gather_shifted_offset_s32(p + 1, even);
  }
#else
  static void load_pairs(const std::int32_t* p, int32x4_t& m, int32x4_t& shift) noexcept {
    const int32x4x2_t ms = vld2q_s32(p);
    m = ms.val[0];
    shift = ms.val[1];
  }
#endif
  // The four lanes' low bytes to y[0], y[ldy], y[2 ldy], y[3 ldy].
#if defined(EMHA_SIMD_MVE)
  static void store(int32x4_t v, std::int8_t* y, std::size_t ldy) noexcept {
    if (ldy == 1) {
      vstrbq_s32(y, v);  // VSTRB.32: one narrowing store
    } else {
      const uint32x4_t offsets = vmulq_n_u32(vidupq_n_u32(0, 1), std::uint32_t(ldy));
      vstrbq_scatter_offset_s32(y, offsets, v);
    }
  }
#else
  static void store(int32x4_t v, std::int8_t* y, std::size_t ldy) noexcept {
    const int16x4_t h = vmovn_s32(v);
    const int8x8_t b = vmovn_s16(vcombine_s16(h, h));
    if (ldy == 1) {
      const std::uint32_t w = vget_lane_u32(vreinterpret_u32_s8(b), 0);
      std::memcpy(y, &w, sizeof w);
    } else {
      y[0] = vget_lane_s8(b, 0);
      y[ldy] = vget_lane_s8(b, 1);
      y[2 * ldy] = vget_lane_s8(b, 2);
      y[3 * ldy] = vget_lane_s8(b, 3);
    }
  }
#endif
};
#else
struct RequantLanes {
  static constexpr std::size_t lanes = 0;
};
#endif

// v clamped to [-128, 127]: one SSAT where the core has it (Cortex-M4/M7, armv6), two compares
// elsewhere.
inline std::int8_t clamp_s8(std::int32_t v) noexcept {
#if defined(__ARM_FEATURE_SAT) && !defined(__aarch64__)
  return static_cast<std::int8_t>(__ssat(v, 8));
#else
  return static_cast<std::int8_t>(v > INT8_MAX ? INT8_MAX : v < INT8_MIN ? INT8_MIN : v);
#endif
}

// v >> 1 (arithmetic) clamped to [-128, 127]: one SSAT with its shift where the core has it.
inline std::int8_t half_to_s8(std::int32_t v) noexcept {
#if defined(__ARM_FEATURE_SAT) && !defined(__aarch64__)
  std::int32_t r;
  __asm__("ssat %0, #8, %1, asr #1" : "=r"(r) : "r"(v));
  return static_cast<std::int8_t>(r);
#else
  return clamp_s8(v >> 1);
#endif
}

// (x m + 2^30 - 2^31 [x < 0]) >> 31 for m in [0, 2^31): the 64-bit sum requantize_s8's loop
// without lanes starts from (requantize_s8.cpp says why). On 32-bit ARM the sum's start is two
// instructions, x >> 31 and 2^30 + (x >> 31) << 31, then SMLAL and the shift (GCC 12 builds the
// start in four); elsewhere the same in C.
inline std::int32_t high_signed_nudge(std::int32_t x, std::int32_t m) noexcept {
#if defined(__ARM_FEATURE_DSP) && !defined(__aarch64__)
  std::int32_t hi, lo;
  __asm__("asr %[hi], %[x], #31\n"
          "add %[lo], %[k], %[hi], lsl #31\n"
          "smlal %[lo], %[hi], %[x], %[m]\n"
          "lsr %[lo], %[lo], #31\n"
          "orr %[lo], %[lo], %[hi], lsl #1"
          : [hi] "=&r"(hi), [lo] "=&r"(lo)
          : [x] "r"(x), [m] "r"(m), [k] "r"(1 << 30));
  return lo;
#else
  const std::int32_t sign = x >> 31;
  const std::uint32_t low = (std::uint32_t(sign) << 31) + (1u << 30);
  const std::int64_t nudge = std::int64_t(sign) * (std::int64_t(1) << 32) + low;
  return static_cast<std::int32_t>((std::int64_t(x) * m + nudge) >> 31);
#endif
}

// requantize_s8's loop for a bias and a multiplier per channel, y[j * ldy] for j < n, while the
// shifts are < 0 and the multipliers >= 0: the outputs done. On 32-bit ARM with the DSP
// instructions one asm loop (20 instructions an output; GCC 12 indexed every array and rebuilt
// 2^30 each output: 23), the arithmetic of requantize_s8.cpp's scalar loop: u from
// (x m + 2^30 - 2^31 [x < 0]) >> 31, then ((u >> (right - 1)) + 1) >> 1 + z, saturated.
#if defined(__ARM_FEATURE_DSP) && !defined(__aarch64__)
inline constexpr bool has_channel_loop = true;
inline std::size_t channel_loop(std::size_t n, const std::int32_t* acc, const std::int32_t* bias,
                                const QuantizedMultiplier* q, std::int32_t zero_point, std::int8_t* y,
                                std::size_t ldy) noexcept {
  if (n == 0) return 0;
  const std::int32_t *at = acc, *const end = acc + n;
  std::int32_t x, m, s, lo, hi;
#if defined(__thumb2__)
#define EMHA_LOAD_Q "ldrd %[m], %[s], [%[q]], #8\n"
#else  // ARM state: LDRD takes an even-odd pair, which the operands need not be
#define EMHA_LOAD_Q "ldr %[m], [%[q]], #8\n" "ldr %[s], [%[q], #-4]\n"
#endif
#define EMHA_CHANNEL_LOOP(store)                                                                          \
  __asm__ volatile("1:\n"                                                                                \
                   "ldr %[x], [%[at]], #4\n"                                                             \
                   "ldr %[hi], [%[bias]], #4\n"                                                          \
                   "add %[x], %[x], %[hi]\n" EMHA_LOAD_Q                                                 \
                   "mvn %[s], %[s]\n" /* right - 1 */                                                    \
                   "orrs %[lo], %[s], %[m]\n"                                                            \
                   "bmi 2f\n" /* shift >= 0 or m < 0: stop */                                            \
                   "asr %[hi], %[x], #31\n"                                                              \
                   "lsl %[lo], %[hi], #31\n"                                                             \
                   "orr %[lo], %[lo], #0x40000000\n"                                                     \
                   "smlal %[lo], %[hi], %[x], %[m]\n"                                                    \
                   "lsr %[lo], %[lo], #31\n"                                                             \
                   "orr %[lo], %[lo], %[hi], lsl #1\n"                                                   \
                   "asr %[lo], %[lo], %[s]\n"                                                            \
                   "add %[lo], %[lo], #1\n"                                                              \
                   "add %[lo], %[zp], %[lo], asr #1\n"                                                   \
                   "ssat %[lo], #8, %[lo]\n" store                                                       \
                   "cmp %[at], %[end]\n"                                                                 \
                   "bne 1b\n"                                                                            \
                   "b 3f\n"                                                                              \
                   "2:\n"                                                                                \
                   "sub %[at], %[at], #4\n"                                                              \
                   "3:\n"                                                                                \
                   : [at] "+r"(at), [bias] "+r"(bias), [q] "+r"(q), [y] "+r"(y), [x] "=&r"(x), [m] "=&r"(m), \
                     [s] "=&r"(s), [lo] "=&r"(lo), [hi] "=&r"(hi)                                        \
                   : [end] "r"(end), [ldy] "r"(ldy), [zp] "r"(zero_point)                                \
                   : "cc", "memory")
  if (ldy == 1)
    EMHA_CHANNEL_LOOP("strb %[lo], [%[y]], #1\n");
  else
    EMHA_CHANNEL_LOOP("strb %[lo], [%[y]]\n" "add %[y], %[y], %[ldy]\n");
#undef EMHA_CHANNEL_LOOP
#undef EMHA_LOAD_Q
  return static_cast<std::size_t>(at - acc);
}
#else
inline constexpr bool has_channel_loop = false;
inline std::size_t channel_loop(std::size_t, const std::int32_t*, const std::int32_t*, const QuantizedMultiplier*,
                                std::int32_t, std::int8_t*, std::size_t) noexcept {
  return 0;  // never called: requantize_s8.cpp tests has_channel_loop
}
#endif

}  // namespace EMHA_ISA
}  // namespace emha::detail

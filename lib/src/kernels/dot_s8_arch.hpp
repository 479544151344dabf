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
//                         on Cortex-M4/M7, 2 x 3 on Helium; 1 on the scalar path)
//   DotS8::cols           rows of b a block of several rows of a takes (4 where absent; 2 on
//                         Cortex-M4/M7, whose 14 core registers hold 2 x 2 sums, 3 pointers and 4
//                         operands; 3
//                         on Helium, whose VMLADAVA sums into the 7 even core registers: 6 sums
//                         and 5 pointers)
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
//   Cortex-M55 (Helium)           VMLADAVA.S8 into one int32 (16 per step), 2 x 3 blocks, their
//                                 loop in asm (blocks_2x3)
//   Cortex-M4/M7, armv6 (DSP)     SXTB16 (and with ROR #8) + SMLAD, two pairs per instruction,
//                                 2 x 2 blocks, a's two rows widened once for all of b's
//                                 (widen_2), the blocks' loop in asm (blocks_2x2)
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
#include <arm_mve.h>
#elif EMHA_SIMD && defined(__ARM_FEATURE_DSP)
#include <arm_acle.h>
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
#elif EMHA_SIMD && defined(EMHA_SIMD_MVE)
struct DotS8 {
  static constexpr std::size_t rows = 2;  // 2 x 3 blocks: VMLADAVA's sums in six even core registers
  static constexpr std::size_t cols = 3;
  static constexpr std::size_t step = 16;
  static constexpr bool offset = false;
  using in = int8x16_t;
  using acc = std::int32_t;
  static acc zero() noexcept { return 0; }
  static in load(const std::int8_t* p) noexcept {  // memcpy: one VLDRB, and no aliasing assumption
    in v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
  }
  static acc madd(acc s, in a, in b) noexcept { return vmladavaq_s8(s, a, b); }
  static std::int32_t sum(acc s) noexcept { return s; }
  // Rows x0 = a, x1 = a + lda of a against `blocks` blocks of three rows of b (ldb bytes apart,
  // the next block 3 ldb on), over the first 16 `steps` int8 of each: c[r][j] = x_r . b_j for
  // j < 3 blocks, c's rows ldc int32 apart. In asm, the whole loop over blocks: VMLADAVA writes
  // an even core register, its six sums and the five pointers take every register but r12 and
  // lr, and from intrinsics GCC 12 kept the loop's state on the stack (about 60 instructions a
  // block besides the 12 of a step; here 26). The state lives in `at`, which r12 holds.
  static void blocks_2x3(std::size_t blocks, std::size_t steps, const std::int8_t* a, std::size_t lda,
                         const std::int8_t* b, std::size_t ldb, std::int32_t* c, std::size_t ldc) noexcept {
    struct State {
      const std::int8_t *x0, *x1, *b;
      std::size_t ldb, steps;
      std::int32_t* c;
      std::size_t ldc_bytes, blocks;
    } state{a, a + lda, b, ldb, steps, c, ldc * sizeof(std::int32_t), blocks};
    static_assert(offsetof(State, b) == 8 && offsetof(State, steps) == 16 && offsetof(State, c) == 20 &&
                  offsetof(State, blocks) == 28);  // the asm's offsets
    register State* at __asm__("r12") = &state;
    __asm__ volatile(
        "0:\n"
        "ldrd r1, r3, [r12, #0]\n"  // x0, x1
        "ldrd r5, lr, [r12, #8]\n"  // y0 = b, ldb
        "add r11, r5, lr\n"         // y1
        "add r9, r11, lr\n"         // y2
        "add lr, r9, lr\n"          // the next block's b
        "str lr, [r12, #8]\n"
        "movs r0, #0\n"
        "movs r2, #0\n"
        "movs r4, #0\n"
        "movs r6, #0\n"
        "mov r8, #0\n"
        "mov r10, #0\n"
        "ldr lr, [r12, #16]\n"  // steps
        "wls lr, lr, 2f\n"
        "1:\n"
        "vldrb.8 q0, [r1], #16\n"
        "vldrb.8 q1, [r3], #16\n"
        "vldrb.8 q2, [r5], #16\n"
        "vmladava.s8 r0, q2, q0\n"
        "vmladava.s8 r6, q2, q1\n"
        "vldrb.8 q2, [r11], #16\n"
        "vmladava.s8 r2, q2, q0\n"
        "vmladava.s8 r8, q2, q1\n"
        "vldrb.8 q2, [r9], #16\n"
        "vmladava.s8 r4, q2, q0\n"
        "vmladava.s8 r10, q2, q1\n"
        "le lr, 1b\n"
        "2:\n"
        "ldrd r1, r3, [r12, #20]\n"  // c, ldc in bytes
        "str r2, [r1, #4]\n"
        "str r4, [r1, #8]\n"
        "str r0, [r1], #12\n"
        "str r1, [r12, #20]\n"  // the next block's c
        "add r1, r1, r3\n"
        "str r6, [r1, #-12]\n"
        "str r8, [r1, #-8]\n"
        "str r10, [r1, #-4]\n"
        "ldr lr, [r12, #28]\n"  // blocks left
        "subs lr, lr, #1\n"
        "str lr, [r12, #28]\n"
        "bne 0b\n"
        : "+r"(at)
        :
        : "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r8", "r9", "r10", "r11", "lr", "q0", "q1", "q2", "cc",
          "memory");
  }
};
#elif EMHA_SIMD && defined(__ARM_FEATURE_DSP)
// The frame pointer (r7 in Thumb, r11 in ARM state: armv6), which an unoptimized build keeps and
// asm may not clobber: blocks_2x2 needs every core register but sp and pc, so it saves that one
// itself and names the other as clobbered.
#if defined(__thumb__)
#define EMHA_DSP_FP "r7"
#define EMHA_DSP_OTHER "r11"
#else
#define EMHA_DSP_FP "r11"
#define EMHA_DSP_OTHER "r7"
#endif
// Both block loops' last lines: the next block while c (r8) is short of c_end (the state's word
// 7), then the saved registers back; and the registers they clobber.
#define EMHA_DSP_NEXT      \
  "ldr r9, [r12, #24]\n"   \
  "cmp r8, r9\n"           \
  "bne 0b\n"               \
  "pop {" EMHA_DSP_FP ", r12}\n"
#define EMHA_DSP_CLOBBERS \
  "r0", "r1", "r2", "r3", "r4", "r5", "r6", EMHA_DSP_OTHER, "r8", "r9", "r10", "lr", "cc", "memory"
struct DotS8 {
  static constexpr std::size_t rows = 2;  // 2 x 2 blocks: 4 loads and 4 SXTB16 per 8 SMLAD
  static constexpr std::size_t cols = 2;
  static constexpr std::size_t step = 4;
  static constexpr bool offset = false;
  struct in {
    int16x2_t even, odd;  // bytes 0 and 2, bytes 1 and 3, sign-extended
  };
  using acc = std::int32_t;
  static acc zero() noexcept { return 0; }
  static in load(const std::int8_t* p) noexcept {
    std::uint32_t w;
    std::memcpy(&w, p, sizeof w);
    int16x2_t odd;  // SXTB16 with its ROR #8: GCC 12 does not fold __sxtb16(__ror(w, 8)) into one
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(odd) : "r"(w));
    return {__sxtb16(static_cast<int8x4_t>(w)), odd};
  }
  static acc madd(acc s, in a, in b) noexcept { return __smlad(a.odd, b.odd, __smlad(a.even, b.even, s)); }
  static std::int32_t sum(acc s) noexcept { return s; }
  // Two rows of a sign-extended once for every row of b, `quads` steps of 4 int8 from x0 and x1:
  // w[4 i .. 4 i + 3] = x0's even and odd pairs, x1's (load's two int16x2_t each).
  using widened = int16x2_t;
  static constexpr std::size_t widen_quads = 16;  // per call at most: 256 bytes of w on the stack
  static void widen_2(const std::int8_t* x0, const std::int8_t* x1, std::size_t quads, widened* w) noexcept {
    for (std::size_t i = 0; i < quads; ++i, x0 += step, x1 += step, w += 4) {
      const in u = load(x0), v = load(x1);
      w[0] = u.even, w[1] = u.odd, w[2] = v.even, w[3] = v.odd;
    }
  }
  // c[r][j] (+)= x_r . b_j over `quads` >= 1 steps, for the rows x0, x1 widened in w (widen_2)
  // and the rows b_j of `blocks` blocks of two (ldb bytes apart, the next block 2 ldb on); c's
  // rows ldc int32 apart, j < 2 blocks; `add`: add to c, else store. A step is 2 LDRD (both rows'
  // pairs), 2 LDR and 4 SXTB16 for 8 SMLAD; two steps a loop turn. In asm, the whole loop over
  // blocks (Thumb-2 and ARM state alike): the sums, pointers, the loop's end and the operands
  // take 14 registers, the frame pointer and r12 among them (both pushed); the loop's state lives
  // in `at`, which r12 holds outside the steps. From intrinsics GCC 12 spilled a pointer and the
  // loop's end every step and kept the blocks' state on the stack (25 instructions a step, about
  // 60 a block).
  [[gnu::always_inline]] static void blocks_2x2(const widened* w, std::size_t quads, const std::int8_t* b, std::size_t ldb,
                         std::int32_t* c, std::size_t ldc, std::size_t blocks, bool add) noexcept {
    struct State {
      const widened* w;
      const std::int8_t* b;
      std::size_t ldb;
      const widened* w_end;
      std::int32_t* c;
      std::size_t ldc_bytes;
      const std::int32_t* c_end;  // the first row's sums past the last block
      std::size_t add;
    } state{w, b, ldb, w + 4 * quads, c, ldc * sizeof(std::int32_t), c + 2 * blocks, add};
    static_assert(offsetof(State, b) == 4 && offsetof(State, w_end) == 12 && offsetof(State, c) == 16 &&
                  offsetof(State, c_end) == 24 && offsetof(State, add) == 28);  // the asm's offsets
    register State* at __asm__("r12") = &state;
// One step: x0's and x1's pairs (r8, r9 and r10, r11: LDRD's even-odd pairs, as ARM state
// requires), b_0's and b_1's words sign-extended (lr, r12).
#define EMHA_DSP_STEP          \
  "ldrd r10, r11, [r4, #8]\n"  \
  "ldrd r8, r9, [r4], #16\n"   \
  "ldr r12, [r5], #4\n"        \
  "sxtb16 lr, r12\n"           \
  "sxtb16 r12, r12, ror #8\n"  \
  "smlad r0, r8, lr, r0\n"     \
  "smlad r0, r9, r12, r0\n"    \
  "smlad r2, r10, lr, r2\n"    \
  "smlad r2, r11, r12, r2\n"   \
  "ldr r12, [r6], #4\n"        \
  "sxtb16 lr, r12\n"           \
  "sxtb16 r12, r12, ror #8\n"  \
  "smlad r1, r8, lr, r1\n"     \
  "smlad r1, r9, r12, r1\n"    \
  "smlad r3, r10, lr, r3\n"    \
  "smlad r3, r11, r12, r3\n"
    __asm__ volatile(
        "push {" EMHA_DSP_FP ", r12}\n"  // r12 (the state) at [sp, #4]
        "0:\n"
        "ldr r4, [r12, #0]\n"       // x's pairs
        "ldrd r8, r9, [r12, #4]\n"  // b, ldb
        "mov r5, r8\n"              // b_0
        "add r6, r8, r9\n"          // b_1
        "add r8, r6, r9\n"          // the next block's b
        "str r8, [r12, #4]\n"
        "ldr r7, [r12, #12]\n"  // the pairs' end
        "ldr r8, [r12, #28]\n"
        "cmp r8, #0\n"
        "beq 1f\n"
        "ldrd r8, r9, [r12, #16]\n"  // c, ldc in bytes: add to c's sums
        "ldrd r0, r1, [r8]\n"
        "add r8, r8, r9\n"
        "ldrd r2, r3, [r8]\n"
        "b 2f\n"
        "1:\n"
        "movs r0, #0\n"
        "movs r1, #0\n"
        "movs r2, #0\n"
        "movs r3, #0\n"
        "2:\n"
        "sub r8, r7, r4\n"
        "tst r8, #16\n"  // an odd number of steps: enter at the turn's second
        "bne 4f\n"
        "3:\n" EMHA_DSP_STEP
        "4:\n" EMHA_DSP_STEP
        "cmp r4, r7\n"
        "bne 3b\n"
        "ldr r12, [sp, #4]\n"
        "ldrd r8, r9, [r12, #16]\n"  // c, ldc in bytes
        "strd r0, r1, [r8]\n"
        "add r10, r8, r9\n"
        "strd r2, r3, [r10]\n"
        "add r8, r8, #8\n"
        "str r8, [r12, #16]\n"
        EMHA_DSP_NEXT
        : "+r"(at)
        :
        : EMHA_DSP_CLOBBERS);
#undef EMHA_DSP_STEP
  }
  // gemm_s8_staged's rows (emha/kernels/gemm_s8.hpp): R of 4, 5 or stage_rows (6) rows of a
  // widened once into the caller's stage, for every row of b; a step is R LDRD, 1 LDR and 2 SXTB16
  // for 2 R SMLAD.
  static constexpr std::size_t stage_rows = 6;
  // w[2 (R i + r)], w[2 (R i + r) + 1] = row r's (x_r = a + r lda) even and odd pairs of step i,
  // for i < quads, r < R (memcpy: the stage is the caller's int16 buffer).
  template <std::size_t R>
  static void widen_stage(const std::int8_t* a, std::size_t lda, std::size_t quads, widened* w) noexcept {
    for (std::size_t i = 0; i < quads; ++i)
      for (std::size_t r = 0; r < R; ++r, w += 2) {
        const in v = load(a + r * lda + i * step);
        std::memcpy(w, &v.even, sizeof v.even);
        std::memcpy(w + 1, &v.odd, sizeof v.odd);
      }
  }
  // c[r][j] = x_r . b_j over `quads` >= 2 steps, for the R rows widened in w (widen_stage) and
  // the n >= 1 rows b_j of b (ldb bytes apart), c's rows ldc int32 apart. In asm, the loop over
  // b's rows (Thumb-2 and ARM state alike): R sums (r0-r5), w and its end (r6, r7), a row's pairs
  // (r8, r9), b_j and its word sign-extended (r10; lr, r12), the odd-count flag (r11); the state
  // lives in `at`, which r12 holds outside the steps. The first step starts the sums (SMUAD).
  template <std::size_t R>
  static void blocks_stage(const widened* w, std::size_t quads, const std::int8_t* b, std::size_t ldb,
                           std::int32_t* c, std::size_t ldc, std::size_t n) noexcept {
    static_assert(R >= 4 && R <= stage_rows);
    struct State {
      const widened* w;
      const std::int8_t* b;
      std::size_t b_next;  // from b_j's end to b_(j+1)
      const widened* w_end;
      std::int32_t* c;
      std::size_t ldc_bytes;
      const std::int32_t* c_end;  // the first row's sums past the last
      std::size_t odd;
    } state{w, b, ldb - step * quads, w + 2 * R * quads, c, ldc * sizeof(std::int32_t), c + n, (quads - 1) % 2};
    static_assert(offsetof(State, b) == 4 && offsetof(State, w_end) == 12 && offsetof(State, c) == 16 &&
                  offsetof(State, c_end) == 24 && offsetof(State, odd) == 28);  // the asm's offsets
    register State* at __asm__("r12") = &state;
// One row's pairs (r8, r9) times b_j's (lr, r12) into its sum; the first step's starts it.
#define EMHA_DSP_ROW(acc)      \
  "ldrd r8, r9, [r6], #8\n"   \
  "smlad " acc ", r8, lr, " acc "\n" \
  "smlad " acc ", r9, r12, " acc "\n"
#define EMHA_DSP_FIRST(acc) \
  "ldrd r8, r9, [r6], #8\n"   \
  "smuad " acc ", r8, lr\n" \
  "smlad " acc ", r9, r12, " acc "\n"
#define EMHA_DSP_ROWS_4(ROW) ROW("r0") ROW("r1") ROW("r2") ROW("r3")
#define EMHA_DSP_ROWS_5(ROW) EMHA_DSP_ROWS_4(ROW) ROW("r4")
#define EMHA_DSP_ROWS_6(ROW) EMHA_DSP_ROWS_5(ROW) ROW("r5")
// The sums to c_j's rows: r8 c_j, r9 ldc in bytes.
#define EMHA_DSP_STORE_4        \
  "add lr, r8, r9, lsl #1\n"  \
  "str r1, [r8, r9]\n"        \
  "str r2, [lr]\n"            \
  "str r3, [lr, r9]\n"
#define EMHA_DSP_STORE_5 EMHA_DSP_STORE_4 \
  "add lr, lr, r9, lsl #1\n"  \
  "str r4, [lr]\n"
#define EMHA_DSP_STORE_6 EMHA_DSP_STORE_5 "str r5, [lr, r9]\n"
#define EMHA_DSP_STEP(ROWS, ROW) \
  "ldr r12, [r10], #4\n"        \
  "sxtb16 lr, r12\n"            \
  "sxtb16 r12, r12, ror #8\n" ROWS(ROW)
#define EMHA_DSP_STAGED(ROWS, STORE)                                                              \
  __asm__ volatile("push {" EMHA_DSP_FP ", r12}\n" /* r12 (the state) at [sp, #4] */              \
                   "ldr r10, [r12, #4]\n"          /* b_0 */                                      \
                   "ldr r7, [r12, #12]\n"          /* the pairs' end */                           \
                   "ldr r11, [r12, #28]\n" /* an odd number after the first: the turn's second */ \
                   "0:\n"                                                                         \
                   "ldr r6, [r12, #0]\n" EMHA_DSP_STEP(ROWS, EMHA_DSP_FIRST)                      \
                   "cmp r11, #0\n"                                                                \
                   "bne 4f\n"                                                                     \
                   "3:\n" EMHA_DSP_STEP(ROWS, EMHA_DSP_ROW)                                       \
                   "4:\n" EMHA_DSP_STEP(ROWS, EMHA_DSP_ROW)                                       \
                   "cmp r6, r7\n"                                                                 \
                   "bne 3b\n"                                                                     \
                   "ldr r12, [sp, #4]\n"                                                          \
                   "ldrd r8, r9, [r12, #16]\n" /* c_j, ldc in bytes */ STORE                      \
                   "str r0, [r8], #4\n"                                                           \
                   "str r8, [r12, #16]\n"                                                         \
                   "ldr r9, [r12, #8]\n" /* b_(j+1) */                                            \
                   "add r10, r10, r9\n" EMHA_DSP_NEXT                                             \
                   : "+r"(at)                                                                     \
                   :                                                                              \
                   : EMHA_DSP_CLOBBERS)
    if constexpr (R == 4)
      EMHA_DSP_STAGED(EMHA_DSP_ROWS_4, EMHA_DSP_STORE_4);
    else if constexpr (R == 5)
      EMHA_DSP_STAGED(EMHA_DSP_ROWS_5, EMHA_DSP_STORE_5);
    else
      EMHA_DSP_STAGED(EMHA_DSP_ROWS_6, EMHA_DSP_STORE_6);
#undef EMHA_DSP_STAGED
#undef EMHA_DSP_STEP
#undef EMHA_DSP_STORE_6
#undef EMHA_DSP_STORE_5
#undef EMHA_DSP_STORE_4
#undef EMHA_DSP_ROWS_6
#undef EMHA_DSP_ROWS_5
#undef EMHA_DSP_ROWS_4
#undef EMHA_DSP_FIRST
#undef EMHA_DSP_ROW
  }
};
#undef EMHA_DSP_FP
#undef EMHA_DSP_OTHER
#undef EMHA_DSP_NEXT
#undef EMHA_DSP_CLOBBERS
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

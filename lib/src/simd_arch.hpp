// SPDX-License-Identifier: Apache-2.0
#pragma once
// The one place that picks the kernels' instruction set (internal to lib/src).
//
// - EMHA_SIMD=1 and xsimd knows this target: `emha::simd::vf32` is xsimd::batch<float> of the
//   build's architecture (avx2 with -mavx2 -mfma, arm64+neon, arm32+neon with
//   -mfpu=neon-vfpv4, ...).
// - EMHA_SIMD=1 on a core with Helium float (MVE, `__ARM_FEATURE_MVE & 2`: Cortex-M55, M85),
//   for which xsimd has no backend: `vf32` wraps `float32x4_t` from <arm_mve.h>, four lanes.
// - otherwise (EMHA_SIMD=0, or xsimd defines XSIMD_NO_SUPPORTED_ARCHITECTURE: Cortex-M4/M7,
//   armv6, armhf without NEON): `vf32` is a one-lane scalar with the same interface, so every
//   kernel body is written once and the scalar build is the same code with one lane.
//
// load_s8(p) is load() of int8 values: `lanes` of them widened to floats (W8A32 weights).
// Besides load/store/splat/fmadd, a multiply-add whose first factor is one float broadcast to
// the lanes (the GEMM's A element) takes `splat_operand(x)`: splat(x) where fmadd takes vectors
// only, the float itself on MVE, whose VFMA takes it from a core register (no Q register held for
// the broadcast, no VDUP).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "isa.hpp"

#ifndef EMHA_SIMD
#define EMHA_SIMD 1
#endif

// Asm that pushes onto the stack begins with EMHA_ASM_STACK(bytes): a non-allocated section of
// the object (dropped by the link: no flash) records the asm's address and its bytes, which
// tests/firmware/stack_budget.py adds to the frame of the function the asm lands in (the
// compiler's frame sizes do not see them).
#define EMHA_ASM_STACK(bytes) \
  ".pushsection .emha_asm_stack, \"\"\n.word 9f, " #bytes "\n.popsection\n9:\n"

#if EMHA_SIMD
#include <xsimd/config/xsimd_config.hpp>
#if !defined(XSIMD_NO_SUPPORTED_ARCHITECTURE)
#define EMHA_SIMD_XSIMD 1
#elif defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
#define EMHA_SIMD_MVE 1
#endif
#endif

#if defined(EMHA_SIMD_XSIMD)
#include <xsimd/xsimd.hpp>
#if defined(__SSE2__)
#include <immintrin.h>
#endif
#elif defined(EMHA_SIMD_MVE)
#include <arm_mve.h>
#endif

namespace emha::simd {
inline namespace EMHA_ISA {

// Scalar a*b + c, fused where the FPU has a fast FMA (x86 with -mfma, aarch64, VFPv4,
// Cortex-M4F/M7/M55) and two roundings elsewhere (SSE2, armv6 VFPv2: a fused one would be a slow
// libm call): the same rounding as the vector fmadd below on each build, for the kernels' tails.
#if defined(__FP_FAST_FMAF)
inline float fmadd(float a, float b, float c) noexcept { return __builtin_fmaf(a, b, c); }
#else
inline float fmadd(float a, float b, float c) noexcept { return a * b + c; }
#endif

// Scalar a*b + c with the product exact: the FMA where it is fast, else in double where the FPU
// has double (armv6 VFPv2, x86: the product of two floats is exact in double, then one rounding
// to double and one to float), else fmadd. For elementwise passes (LayerNorm's affine), not
// inner loops: double costs twice the cycles on VFPv2.
inline float fmadd_exact_product(float a, float b, float c) noexcept {
#if defined(__FP_FAST_FMAF) || (defined(__ARM_FP) && !(__ARM_FP & 8))
  return fmadd(a, b, c);
#else
  return float(double(a) * double(b) + double(c));
#endif
}

#if defined(EMHA_SIMD_XSIMD)

using arch = xsimd::default_arch;
using vf32 = xsimd::batch<float, arch>;
inline constexpr bool enabled = true;
// The variant's one name, as CMake's EMHA_X86_ISA and the isa_<name> namespaces spell it:
// "avx512vnni", "avx2vnni", "avx512", "avx2", "sse2", "arm64+neon", "arm32+neon" (xsimd's own name
// for any other). xsimd 8.1 has no VNNI architecture: with VNNI its vectors are avx512bw's or, with
// AVX-VNNI alone, fma3<avx2>'s.
template <class A>
constexpr const char* isa_name() noexcept {
#if defined(__AVX512VNNI__)
  if (std::is_same<A, xsimd::avx512bw>::value) return "avx512vnni";
#endif
#if defined(__AVXVNNI__)
  if (std::is_same<A, xsimd::fma3<xsimd::avx2>>::value) return "avx2vnni";
#endif
  if (std::is_same<A, xsimd::avx512bw>::value) return "avx512";
  if (std::is_same<A, xsimd::fma3<xsimd::avx2>>::value) return "avx2";
  return A::name();
}
inline constexpr const char* isa = isa_name<arch>();
inline constexpr bool is_neon64 = std::is_same<arch, xsimd::neon64>::value;
inline constexpr bool is_mve = false;

inline vf32 load(const float* p) noexcept { return vf32::load_unaligned(p); }
inline void store(float* p, vf32 v) noexcept { v.store_unaligned(p); }
inline vf32 splat(float x) noexcept { return vf32(x); }
#if defined(__AVX512F__)
// a*b + c, one rounding. xsimd 8.1 has no AVX-512 fma: its generic one is a multiply and an add,
// two roundings and twice the instructions (what that cost the AVX-512 GEMM: bench/README.md history).
inline vf32 fmadd(vf32 a, vf32 b, vf32 c) noexcept { return _mm512_fmadd_ps(a, b, c); }
#else
inline vf32 fmadd(vf32 a, vf32 b, vf32 c) noexcept { return xsimd::fma(a, b, c); }  // a*b + c
#endif
inline vf32 splat_operand(float x) noexcept { return splat(x); }
// `lanes` int8 values p[0 .. lanes) widened to floats (exact): sign-extended to int32, converted.
inline vf32 load_s8(const std::int8_t* p) noexcept {
#if defined(__AVX512F__)
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
#elif defined(__AVX2__)
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
#elif defined(__SSE4_1__)
  std::int32_t bytes;
  std::memcpy(&bytes, p, 4);
  return _mm_cvtepi32_ps(_mm_cvtepi8_epi32(_mm_cvtsi32_si128(bytes)));
#elif defined(__SSE2__)
  // No PMOVSX: each byte to the top of its 32-bit lane (unpack with itself twice), then an
  // arithmetic shift right by 24 sign-extends it.
  std::int32_t bytes;
  std::memcpy(&bytes, p, 4);
  __m128i x = _mm_cvtsi32_si128(bytes);
  x = _mm_unpacklo_epi8(x, x);
  x = _mm_unpacklo_epi16(x, x);
  return _mm_cvtepi32_ps(_mm_srai_epi32(x, 24));
#else  // NEON, 4 lanes: sxtl to 16 bits, sxtl to 32, scvtf
  std::int32_t bytes;
  std::memcpy(&bytes, p, 4);
  const int16x8_t h = vmovl_s8(vreinterpret_s8_s32(vdup_n_s32(bytes)));
  return vcvtq_f32_s32(vmovl_s16(vget_low_s16(h)));
#endif
}
// The lanes' fmadd_exact_product: every vector build here has an FMA (AVX2, AVX-512, NEON-VFPv4).
inline vf32 fmadd_exact_product(vf32 a, vf32 b, vf32 c) noexcept { return fmadd(a, b, c); }
inline vf32 vmax(vf32 a, vf32 b) noexcept { return xsimd::max(a, b); }
inline vf32 vabs(vf32 a) noexcept { return xsimd::abs(a); }
// a / b correctly rounded per lane. xsimd 8.1 divides floats on NEON (arm32 and arm64 alike) by
// a reciprocal estimate and two Newton steps, which is not correctly rounded: aarch64 has a vector
// divide, taken here directly; armv7 NEON has none, so each lane goes through the VFP's divide.
inline vf32 vdiv(vf32 a, vf32 b) noexcept {
#if defined(__aarch64__)
  return vdivq_f32(a, b);
#else
  if constexpr (std::is_same<arch, xsimd::neon>::value) {
    alignas(16) float x[vf32::size], y[vf32::size];
    a.store_aligned(x);
    b.store_aligned(y);
    for (std::size_t i = 0; i < vf32::size; ++i) x[i] /= y[i];
    return vf32::load_aligned(x);
  } else {
    return a / b;
  }
#endif
}
// exp(x) = 2^n * p(r): n = round(x / ln 2), r = x - n ln 2 in two parts (Cody-Waite), p the
// Cephes expf polynomial (degree 7, ~1 ulp for |r| <= ln(2) / 2), 2^n built in the exponent bits
// and folded into the last FMA. The softmax's exp loop is bound by the FMA/multiply pipes (two
// on most x86 and Cortex-A7x cores): this takes 11 FMAs and multiplies per vector and no
// compares, blends or round instructions (n comes from adding 1.5 * 2^23, the same on every
// target; xsimd emulates the round on NEON), where xsimd::exp adds range compares and blends.
// x is clamped to [-88, 88.37]: below about -87.34 exp(x) is not a normal float and comes out
// subnormal (0 where the FPU flushes them: armv7 NEON), from -87.68 down exactly 0 (n = -127
// makes 2^n zero); above, exp(88.37) ~ 2.4e38 (the softmax only passes x = z - max <= 0).
// NaN stays NaN: x86's max/min return their second operand, x, when one is NaN (the order below
// matters there), NEON's return NaN.
inline vf32 vexp(vf32 x) noexcept {
  using vi32 = xsimd::batch<std::int32_t, arch>;
  constexpr float log2e = 1.44269504088896341f;
  constexpr float ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;  // ln 2 = ln2_hi + ln2_lo
  constexpr float round_magic = 12582912.0f;       // 1.5 * 2^23: t = y + this rounds y to n
  constexpr std::int32_t round_magic_bits = 0x4B400000;  // ... and t's bits are these + n
  x = xsimd::min(vf32(88.3762626647949f), xsimd::max(vf32(-88.0f), x));
  const vf32 t = fmadd(x, vf32(log2e), vf32(round_magic));
  const vf32 n = t - vf32(round_magic);
  vf32 r = fmadd(n, vf32(-ln2_hi), x);
  r = fmadd(n, vf32(-ln2_lo), r);
  vf32 q = fmadd(vf32(1.9875691500e-4f), r, vf32(1.3981999507e-3f));
  q = fmadd(q, r, vf32(8.3334519073e-3f));
  q = fmadd(q, r, vf32(4.1665795894e-2f));
  q = fmadd(q, r, vf32(1.6666665459e-1f));
  q = fmadd(q, r, vf32(5.0000001201e-1f));
  const vf32 p_minus_1 = fmadd(q, r * r, r);
  const vi32 biased_n = xsimd::bitwise_cast<vi32>(t) + vi32(127 - round_magic_bits);  // 0..254
  const vf32 two_n = xsimd::bitwise_cast<vf32>(biased_n << 23);
  return fmadd(p_minus_1, two_n, two_n);
}

// dst[i][j] = src[j][i] for a T x T block (rows lds / ldd apart), T = transpose_block: the
// B-packing of C = A B^T moves every element of B through one of these.
#if defined(__AVX__)
// 8 x 8 on AVX: unpack pairs of rows, shuffle pairs of pairs, then swap 128-bit halves
// (24 shuffles per 64 floats, where 4 x 4 blocks take 32). Forced inline into the packing
// loop: GCC otherwise calls it per block (-1% instructions of gemm_f32 nt 64x384x128).
inline constexpr std::size_t transpose_block = 8;
[[gnu::always_inline]] inline void transpose_block_f32(const float* src, std::size_t lds,
                                                       float* dst, std::size_t ldd) noexcept {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * lds);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);      // a0 b0 a1 b1 | a4 b4 a5 b5
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);  // a2 b2 a3 b3 | a6 b6 a7 b7
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);      // a0 b0 c0 d0 | a4 b4 c4 d4
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);  // a1 b1 c1 d1 | a5 ..
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {  // rows 0-3 of the block in r[0..3], rows 4-7 in r[4..7]
    _mm256_storeu_ps(dst + i * ldd, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(dst + (i + 4) * ldd, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}
#else
// 4 x 4: two rounds of zips on 4-lane vectors, where zip is a true interleave (NEON; SSE).
#if defined(__SSE2__)
using vf32x4 = xsimd::batch<float, xsimd::sse2>;
#elif defined(__aarch64__)
using vf32x4 = xsimd::batch<float, xsimd::neon64>;
#else
using vf32x4 = xsimd::batch<float, xsimd::neon>;
#endif
inline constexpr std::size_t transpose_block = 4;
inline void transpose_block_f32(const float* src, std::size_t lds, float* dst,
                                std::size_t ldd) noexcept {
  const vf32x4 r0 = vf32x4::load_unaligned(src), r1 = vf32x4::load_unaligned(src + lds);
  const vf32x4 r2 = vf32x4::load_unaligned(src + 2 * lds), r3 = vf32x4::load_unaligned(src + 3 * lds);
  const vf32x4 t0 = xsimd::zip_lo(r0, r2), t1 = xsimd::zip_hi(r0, r2);  // a0 c0 a1 c1 | a2 c2 a3 c3
  const vf32x4 t2 = xsimd::zip_lo(r1, r3), t3 = xsimd::zip_hi(r1, r3);  // b0 d0 b1 d1 | b2 d2 b3 d3
  xsimd::zip_lo(t0, t2).store_unaligned(dst);
  xsimd::zip_hi(t0, t2).store_unaligned(dst + ldd);
  xsimd::zip_lo(t1, t3).store_unaligned(dst + 2 * ldd);
  xsimd::zip_hi(t1, t3).store_unaligned(dst + 3 * ldd);
}
#endif

#elif defined(EMHA_SIMD_MVE)

// Four float lanes in one Q register of Helium (MVE). The core has 8 Q registers, which the
// GEMM's tile is sized for (gemm_target.hpp).
struct vf32 {
  static constexpr std::size_t size = 4;
  float32x4_t v;
  friend vf32 operator+(vf32 a, vf32 b) noexcept { return {vaddq_f32(a.v, b.v)}; }
  friend vf32 operator-(vf32 a, vf32 b) noexcept { return {vsubq_f32(a.v, b.v)}; }
  friend vf32 operator*(vf32 a, vf32 b) noexcept { return {vmulq_f32(a.v, b.v)}; }
};
struct arch {  // tag of the MVE build, in place of an xsimd architecture
  static constexpr const char* name() noexcept { return "mve"; }
};
inline constexpr bool enabled = true;
inline constexpr const char* isa = arch::name();
inline constexpr bool is_neon64 = false;
inline constexpr bool is_mve = true;

// Loads and stores of floats as float vectors (memcpy, one VLDRW / VSTRW). GCC 12's vld1q_f32
// and vst1q_f32 access memory through int pointers: under strict aliasing their accesses were
// reordered around float stores and loads of the same bytes (seen: reduce_sums reloaded four
// scalar sums before three of them were stored).
inline vf32 load(const float* p) noexcept {
  float32x4_t v;
  __builtin_memcpy(&v, p, sizeof v);
  return {v};
}
inline void store(float* p, vf32 v) noexcept { __builtin_memcpy(p, &v.v, sizeof v.v); }
inline vf32 splat(float x) noexcept { return {vdupq_n_f32(x)}; }
// a*b + c, one rounding (VFMA), as the scalar fmadd on this FPU.
inline vf32 fmadd(vf32 a, vf32 b, vf32 c) noexcept { return {vfmaq_f32(c.v, a.v, b.v)}; }
// A float to multiply into vectors: VFMA's vector-by-scalar form reads it from a core register.
struct scalar_operand {
  float x;
};
inline scalar_operand splat_operand(float x) noexcept { return {x}; }
inline vf32 fmadd(scalar_operand a, vf32 b, vf32 c) noexcept { return {vfmaq_n_f32(c.v, b.v, a.x)}; }
inline vf32 fmadd_exact_product(vf32 a, vf32 b, vf32 c) noexcept { return fmadd(a, b, c); }
// Four int8 values p[0 .. 4) widened to floats (exact): VLDRB.S32 sign-extends as it loads.
inline vf32 load_s8(const std::int8_t* p) noexcept { return {vcvtq_f32_s32(vldrbq_s32(p))}; }
// a < b ? b : a per lane, the scalar path's max (a NaN in a stays; VMAXNM would drop it).
// Compares here are written as gt: MVE's lt and le, like the LT and LE conditions after a VCMP,
// are true when the operands are unordered (a NaN).
inline vf32 vmax(vf32 a, vf32 b) noexcept { return {vpselq_f32(b.v, a.v, vcmpgtq_f32(b.v, a.v))}; }
inline vf32 vabs(vf32 a) noexcept { return {vabsq_f32(a.v)}; }
// a / b correctly rounded per lane: MVE has no vector divide, each lane goes through the FPU's.
inline vf32 vdiv(vf32 a, vf32 b) noexcept {
  float32x4_t q = a.v;
  q = vsetq_lane_f32(vgetq_lane_f32(a.v, 0) / vgetq_lane_f32(b.v, 0), q, 0);
  q = vsetq_lane_f32(vgetq_lane_f32(a.v, 1) / vgetq_lane_f32(b.v, 1), q, 1);
  q = vsetq_lane_f32(vgetq_lane_f32(a.v, 2) / vgetq_lane_f32(b.v, 2), q, 2);
  q = vsetq_lane_f32(vgetq_lane_f32(a.v, 3) / vgetq_lane_f32(b.v, 3), q, 3);
  return {q};
}
// exp(x): the same clamp, reduction, polynomial and 2^n construction as the xsimd path's vexp
// above, the same operations in the same order (one rounding per FMA), so the same bits lane for
// lane (~1 ulp). The constants are VFMA's scalar operands where it takes one (core registers: the
// 8 Q registers do not hold them all). VMAXNM and VMINNM would clamp a NaN to a bound: a NaN x is
// put back at the end (MVE's lt and le compares are true for a NaN, eq is not).
inline vf32 vexp(vf32 x) noexcept {
  constexpr float log2e = 1.44269504088896341f;
  constexpr float ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;  // ln 2 = ln2_hi + ln2_lo
  constexpr float round_magic = 12582912.0f;       // 1.5 * 2^23: t = y + this rounds y to n
  constexpr std::int32_t round_magic_bits = 0x4B400000;  // ... and t's bits are these + n
  const float32x4_t c =
      vminnmq_f32(vdupq_n_f32(88.3762626647949f), vmaxnmq_f32(vdupq_n_f32(-88.0f), x.v));
  const float32x4_t t = vfmaq_n_f32(vdupq_n_f32(round_magic), c, log2e);  // c * log2e + magic
  const float32x4_t n = vsubq_n_f32(t, round_magic);
  float32x4_t r = vfmaq_n_f32(c, n, -ln2_hi);  // n * -ln2_hi + c
  r = vfmaq_n_f32(r, n, -ln2_lo);
  float32x4_t q = vfmaq_n_f32(vdupq_n_f32(1.3981999507e-3f), r, 1.9875691500e-4f);
  q = vfmasq_n_f32(q, r, 8.3334519073e-3f);  // q * r + constant
  q = vfmasq_n_f32(q, r, 4.1665795894e-2f);
  q = vfmasq_n_f32(q, r, 1.6666665459e-1f);
  q = vfmasq_n_f32(q, r, 5.0000001201e-1f);
  const float32x4_t p_minus_1 = vfmaq_f32(r, q, vmulq_f32(r, r));  // q * r^2 + r
  const int32x4_t biased_n = vaddq_n_s32(vreinterpretq_s32_f32(t), 127 - round_magic_bits);
  const float32x4_t two_n = vreinterpretq_f32_s32(vshlq_n_s32(biased_n, 23));  // 0..254 in the exponent
  const float32x4_t e = vfmaq_f32(two_n, p_minus_1, two_n);
  return {vpselq_f32(e, x.v, vcmpeqq_f32(x.v, x.v))};  // x where x is NaN
}

// 4 x 4: one gather per column of the block (lanes lds floats apart), stored as a row.
inline constexpr std::size_t transpose_block = 4;
inline void transpose_block_f32(const float* src, std::size_t lds, float* dst,
                                std::size_t ldd) noexcept {
  const uint32x4_t rows = vmulq_n_u32(vidupq_n_u32(0u, 1), std::uint32_t(lds));  // 0, lds, 2 lds, 3 lds
  asm("" : "+r"(src) : : "memory");  // the gathers read src through int pointers too (see load)
  for (std::size_t i = 0; i < 4; ++i)
    store(dst + i * ldd, {vldrwq_gather_shifted_offset_f32(src + i, rows)});
}
#else

// One float that behaves like a batch: the scalar path shares the kernels' bodies.
struct vf32 {
  static constexpr std::size_t size = 1;
  float v;
  friend vf32 operator+(vf32 a, vf32 b) noexcept { return {a.v + b.v}; }
  friend vf32 operator-(vf32 a, vf32 b) noexcept { return {a.v - b.v}; }
  friend vf32 operator*(vf32 a, vf32 b) noexcept { return {a.v * b.v}; }
};
struct arch {  // tag of the scalar build, in place of an xsimd architecture
  static constexpr const char* name() noexcept { return "scalar"; }
};
inline constexpr bool enabled = false;
inline constexpr const char* isa = arch::name();
inline constexpr bool is_neon64 = false;
inline constexpr bool is_mve = false;

inline vf32 load(const float* p) noexcept { return {*p}; }
inline void store(float* p, vf32 v) noexcept { *p = v.v; }
inline vf32 splat(float x) noexcept { return {x}; }
inline vf32 fmadd(vf32 a, vf32 b, vf32 c) noexcept { return {fmadd(a.v, b.v, c.v)}; }
inline vf32 splat_operand(float x) noexcept { return {x}; }
inline vf32 fmadd_exact_product(vf32 a, vf32 b, vf32 c) noexcept {
  return {fmadd_exact_product(a.v, b.v, c.v)};
}
inline vf32 load_s8(const std::int8_t* p) noexcept { return {float(*p)}; }
inline vf32 vmax(vf32 a, vf32 b) noexcept { return {a.v < b.v ? b.v : a.v}; }
inline vf32 vabs(vf32 a) noexcept { return {a.v < 0.0f ? -a.v : a.v}; }
inline vf32 vdiv(vf32 a, vf32 b) noexcept { return {a.v / b.v}; }
inline vf32 vexp(vf32 x) noexcept { return {std::exp(x.v)}; }

inline constexpr std::size_t transpose_block = 4;
inline void transpose_block_f32(const float* src, std::size_t lds, float* dst,
                                std::size_t ldd) noexcept {
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t j = 0; j < 4; ++j) dst[i * ldd + j] = src[j * lds + i];
}

#endif

inline constexpr std::size_t lanes = vf32::size;
// Where the stack is the budget (Cortex-M, scalar or MVE; armv6 shares the scalar path): the
// kernels and the layer choose small frames over speed there (out-of-line GEMM tiles, one row
// per softmax group, attention head by head; tests/firmware/stack_budget.py holds every public
// entry point to 1 KiB).
inline constexpr bool lean_stack = !enabled || is_mve;
// A build that asks for size (-Os): kernels with a compact variant take it over the unrolled one
// (kernels/gemm_ukernel_compact.hpp).
#if defined(__OPTIMIZE_SIZE__)
inline constexpr bool optimize_size = true;
#else
inline constexpr bool optimize_size = false;
#endif

}  // namespace EMHA_ISA
}  // namespace emha::simd

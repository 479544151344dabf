// SPDX-License-Identifier: Apache-2.0
#pragma once
// The int16 dot products of one instruction set, as gemm_s16x8 and gemm_s16 (gemm_s16.cpp) call
// them, s[j] = sum_{p < n} a[p] * b[j * ldb + p] for j < Cols:
//   Dot16::cols                        rows of b one call takes (4; 2 on Cortex-M4/M7, whose core
//                                      registers hold 2 sums, their pointers and the operands)
//   Dot16::partial<Cols>(n, a, b8, ldb, s32)   b int8, sums in int32: n <= 256 keeps them exact
//                                      (an int16 x int8 product is at most 2^22)
//   Dot16::partial<Cols>(n, a, b16, ldb, s64)  b int16, sums in int64 (two int16 x int16
//                                      products can overflow int32)
// One struct per target, chosen by the compiler's feature macros:
//   Cortex-M55 (Helium)    8 products a step: VLDRB.S16 widens the weights as it loads them,
//                          VMLADAVA.S16 (int32) or VMLALDAVA.S16 (int64) into a core register
//                          per row of b; k's tail predicated (VCTP), no scalar loop
//   Cortex-M4/M7 (DSP)     int8 b: a's pairs regrouped (a0, a2), (a1, a3) once per 4 products,
//                          SXTB16 (and with ROR #8) of each weight word, two SMLAD; int16 b:
//                          SMLALD on the pairs as loaded
//   others                 the loops, which x86 and NEON compilers vectorize

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "simd_arch.hpp"

#if EMHA_SIMD && defined(EMHA_SIMD_MVE)
#include <arm_mve.h>
#elif EMHA_SIMD && defined(__ARM_FEATURE_DSP) && !defined(__ARM_NEON) && !defined(__ARM_NEON__)
#include <arm_acle.h>
#endif

namespace emha::detail {
inline namespace EMHA_ISA {

#if EMHA_SIMD && defined(EMHA_SIMD_MVE)
struct Dot16 {
  static constexpr std::size_t cols = 4;
  // Stepped pointers (GCC indexes each load from its base otherwise), out of line (inlined in the
  // caller's loops, the sums and pointers spill).
  template <std::size_t Cols>
  [[gnu::noinline]] static void partial(std::size_t n, const std::int16_t* a, const std::int8_t* b, std::size_t ldb,
                                        std::int32_t* s) noexcept {
    std::int32_t acc[Cols];
    const std::int8_t* bj[Cols];
    for (std::size_t j = 0; j < Cols; ++j) acc[j] = 0, bj[j] = b + j * ldb;
    for (; n >= 8; n -= 8, a += 8) {
      const int16x8_t va = vldrhq_s16(a);
      for (std::size_t j = 0; j < Cols; ++j) {
        acc[j] = vmladavaq_s16(acc[j], va, vldrbq_s16(bj[j]));
        bj[j] += 8;
      }
    }
    if (n > 0) {
      const mve_pred16_t m = vctp16q(std::uint32_t(n));
      const int16x8_t va = vldrhq_z_s16(a, m);
      for (std::size_t j = 0; j < Cols; ++j) acc[j] = vmladavaq_p_s16(acc[j], va, vldrbq_z_s16(bj[j], m), m);
    }
    for (std::size_t j = 0; j < Cols; ++j) s[j] = acc[j];
  }
  template <std::size_t Cols>
  [[gnu::noinline]] static void partial(std::size_t n, const std::int16_t* a, const std::int16_t* b, std::size_t ldb,
                                        std::int64_t* s) noexcept {
    std::int64_t acc[Cols];
    const std::int16_t* bj[Cols];
    for (std::size_t j = 0; j < Cols; ++j) acc[j] = 0, bj[j] = b + j * ldb;
    for (; n >= 8; n -= 8, a += 8) {
      const int16x8_t va = vldrhq_s16(a);
      for (std::size_t j = 0; j < Cols; ++j) {
        acc[j] = vmlaldavaq_s16(acc[j], va, vldrhq_s16(bj[j]));
        bj[j] += 8;
      }
    }
    if (n > 0) {
      const mve_pred16_t m = vctp16q(std::uint32_t(n));
      const int16x8_t va = vldrhq_z_s16(a, m);
      for (std::size_t j = 0; j < Cols; ++j) acc[j] = vmlaldavaq_p_s16(acc[j], va, vldrhq_z_s16(bj[j], m), m);
    }
    for (std::size_t j = 0; j < Cols; ++j) s[j] = acc[j];
  }
};
#elif EMHA_SIMD && defined(__ARM_FEATURE_DSP) && !defined(__ARM_NEON) && !defined(__ARM_NEON__)
struct Dot16 {
  static constexpr std::size_t cols = 2;
  // The word at p (any alignment: one LDR on these cores).
  template <class T>
  static std::uint32_t word(const T* p) noexcept {
    std::uint32_t w;
    std::memcpy(&w, p, sizeof w);
    return w;
  }
  // Not inlined: in the caller's loops the sums and pointers below spill (14 core registers).
  template <std::size_t Cols>
  [[gnu::noinline]] static void partial(std::size_t n, const std::int16_t* a, const std::int8_t* b, std::size_t ldb,
                      std::int32_t* s) noexcept {
    std::int32_t acc[Cols];
    const std::int8_t* bj[Cols];  // stepped pointers: GCC indexes each load from its base otherwise
    for (std::size_t j = 0; j < Cols; ++j) acc[j] = 0, bj[j] = b + j * ldb;
    const std::int16_t* const end = a + (n & ~std::size_t(3));
    for (; a != end; a += 4) {
      const std::uint32_t a01 = word(a), a23 = word(a + 2);
      std::uint32_t even, odd;  // (a0, a2) and (a1, a3): PKHBT, PKHTB
      __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(even) : "r"(a01), "r"(a23));
      __asm__("pkhtb %0, %1, %2, asr #16" : "=r"(odd) : "r"(a23), "r"(a01));
      for (std::size_t j = 0; j < Cols; ++j) {
        const std::uint32_t w = word(bj[j]);
        bj[j] += 4;
        std::uint32_t w13;  // SXTB16 with its ROR #8 (GCC 12 does not fold __sxtb16(__ror(w, 8)))
        __asm__("sxtb16 %0, %1, ror #8" : "=r"(w13) : "r"(w));
        acc[j] = __smlad(static_cast<int16x2_t>(odd), static_cast<int16x2_t>(w13),
                         __smlad(static_cast<int16x2_t>(even), __sxtb16(static_cast<int8x4_t>(w)), acc[j]));
      }
    }
    for (std::size_t p = 0; p < (n & 3); ++p)
      for (std::size_t j = 0; j < Cols; ++j) acc[j] += std::int32_t(a[p]) * bj[j][p];
    for (std::size_t j = 0; j < Cols; ++j) s[j] = acc[j];
  }
  // Not inlined: in the caller's loops the sums and pointers below spill (14 core registers).
  template <std::size_t Cols>
  [[gnu::noinline]] static void partial(std::size_t n, const std::int16_t* a, const std::int16_t* b, std::size_t ldb,
                      std::int64_t* s) noexcept {
    std::int64_t acc[Cols];
    const std::int16_t* bj[Cols];
    for (std::size_t j = 0; j < Cols; ++j) acc[j] = 0, bj[j] = b + j * ldb;
    const std::int16_t* const end = a + (n & ~std::size_t(1));
    for (; a != end; a += 2) {
      const auto x = static_cast<int16x2_t>(word(a));
      for (std::size_t j = 0; j < Cols; ++j) {
        acc[j] = __smlald(x, static_cast<int16x2_t>(word(bj[j])), acc[j]);
        bj[j] += 2;
      }
    }
    if (n & 1)
      for (std::size_t j = 0; j < Cols; ++j) acc[j] += std::int64_t(*a) * *bj[j];
    for (std::size_t j = 0; j < Cols; ++j) s[j] = acc[j];
  }
};
#else
struct Dot16 {
  static constexpr std::size_t cols = 4;
  template <std::size_t Cols>
  static void partial(std::size_t n, const std::int16_t* a, const std::int8_t* b, std::size_t ldb,
                      std::int32_t* s) noexcept {
    for (std::size_t j = 0; j < Cols; ++j) s[j] = 0;
    for (std::size_t p = 0; p < n; ++p)
      for (std::size_t j = 0; j < Cols; ++j) s[j] += std::int32_t(a[p]) * b[j * ldb + p];
  }
  template <std::size_t Cols>
  static void partial(std::size_t n, const std::int16_t* a, const std::int16_t* b, std::size_t ldb,
                      std::int64_t* s) noexcept {
    for (std::size_t j = 0; j < Cols; ++j) s[j] = 0;
    for (std::size_t p = 0; p < n; ++p)
      for (std::size_t j = 0; j < Cols; ++j) s[j] += std::int64_t(a[p]) * b[j * ldb + p];
  }
};
#endif

}  // namespace EMHA_ISA
}  // namespace emha::detail

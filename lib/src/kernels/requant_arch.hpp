// SPDX-License-Identifier: Apache-2.0
#pragma once
// Double-rounding requantization of four int32 lanes for requantize_s8 (requantize_s8.cpp), where
// the target has 32-bit integer vectors with a rounding doubling multiply-high:
//   x << max(shift, 0); VQRDMULH by the multiplier (gemmlowp's SaturatingRoundingDoublingHighMul,
//   which is that instruction); the rounding divide by 2^max(-shift, 0) as gemmlowp's NEON one
//   (x - 1 where x < 0 and the shift is not 0, saturating, then VRSHL: half away from zero);
//   + zero point, clamped to int8.
// Requant4::lanes is 4 on NEON (aarch64, armv7) and Helium, 0 elsewhere (the scalar loop runs).

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "emha/kernels/requant.hpp"
#include "simd_arch.hpp"

#if EMHA_SIMD && (defined(__ARM_NEON) || defined(__ARM_NEON__))
#include <arm_neon.h>
#elif EMHA_SIMD && defined(EMHA_SIMD_MVE)
#include <arm_mve.h>
#endif

namespace emha::detail {
inline namespace EMHA_ISA {

#if EMHA_SIMD && ((defined(__ARM_NEON) || defined(__ARM_NEON__)) || defined(EMHA_SIMD_MVE))
struct Requant4 {
  static constexpr std::size_t lanes = 4;
  // Four outputs of acc[0..3] + bias[0..3] (bias may be null) with multipliers q[0], q[step], ...
  // (step 0 or 1), as int32 lanes in [-128, 127].
  static int32x4_t run(const std::int32_t* acc, const std::int32_t* bias, const QuantizedMultiplier* q,
                       std::size_t step, std::int32_t zero_point) noexcept {
    int32x4_t x = vld1q_s32(acc);
    if (bias) x = vaddq_s32(x, vld1q_s32(bias));  // modulo 2^32, as the reference
    int32x4_t m, shift;
    if (step) {  // {multiplier, shift} pairs, de-interleaved
      const int32x4x2_t ms = vld2q_s32(reinterpret_cast<const std::int32_t*>(q));
      m = ms.val[0];
      shift = ms.val[1];
    } else {
      m = vdupq_n_s32(q->multiplier);
      shift = vdupq_n_s32(q->shift);
    }
    const int32x4_t zero = vdupq_n_s32(0);
    const int32x4_t left = vmaxq_s32(shift, zero), right_neg = vminq_s32(shift, zero);  // -right
    x = vqrdmulhq_s32(vshlq_s32(x, left), m);
    const int32x4_t fixup = vshrq_n_s32(vandq_s32(x, right_neg), 31);
    x = vrshlq_s32(vqaddq_s32(x, fixup), right_neg);
    x = vaddq_s32(x, vdupq_n_s32(zero_point));
    return vminq_s32(vmaxq_s32(x, vdupq_n_s32(INT8_MIN)), vdupq_n_s32(INT8_MAX));
  }
  static void store(int32x4_t v, std::int8_t* y, std::size_t ldy) noexcept {
    std::int32_t lane[4];
    vst1q_s32(lane, v);
    for (std::size_t i = 0; i < 4; ++i) y[i * ldy] = static_cast<std::int8_t>(lane[i]);
  }
};
#else
struct Requant4 {
  static constexpr std::size_t lanes = 0;
};
#endif

}  // namespace EMHA_ISA
}  // namespace emha::detail

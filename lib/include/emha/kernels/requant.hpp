// SPDX-License-Identifier: Apache-2.0
#pragma once
// Fixed-point requantization, bit for bit TFLite's and CMSIS-NN's: an int32 accumulator times a
// real multiplier, stored as `multiplier` (Q31, in [2^30, 2^31), or 0) and `shift` (real =
// multiplier * 2^(shift - 31)). The exporter computes the pair offline (TFLite's
// QuantizeMultiplier), so a device stores no float.
//
// Two roundings, as the two builds of those libraries:
//   Rounding::double_rounding  TFLite's default and CMSIS-NN's (arm_nn_requantize): x shifted
//     left by max(shift, 0) (two's complement wrap-around where TFLite's is undefined), then
//     gemmlowp's SaturatingRoundingDoublingHighMul (x * m / 2^31 rounded half up, i.e. VQRDMULH),
//     then RoundingDivideByPOT by max(-shift, 0) (half away from zero);
//   Rounding::single_rounding  TFLITE_SINGLE_ROUNDING and CMSIS_NN_USE_SINGLE_ROUNDING:
//     (x * m + 2^(30 - shift)) >> (31 - shift), one rounding half up; shift in [-31, 30].
// They differ in the last bit on some inputs: match the build you compare against.

#include <cstdint>

namespace emha {

enum class Rounding : std::uint8_t { double_rounding, single_rounding };

// A real multiplier in fixed point: multiplier * 2^(shift - 31).
struct QuantizedMultiplier {
  std::int32_t multiplier = 0;  // Q31: [2^30, 2^31), or 0 for a multiplier under 2^-32
  std::int32_t shift = 0;       // [-31, 30]
};

// round(a * b / 2^31), half up, saturated: only a = b = INT32_MIN overflows (to INT32_MAX).
constexpr std::int32_t saturating_rounding_doubling_high_mul(std::int32_t a, std::int32_t b) noexcept {
  if (a == INT32_MIN && b == INT32_MIN) return INT32_MAX;
  const std::int64_t ab = std::int64_t(a) * std::int64_t(b);
  return static_cast<std::int32_t>((ab + (std::int64_t(1) << 30)) >> 31);  // floor: ties up
}

// round(x / 2^exponent), half away from zero; exponent in [0, 31].
constexpr std::int32_t rounding_divide_by_pot(std::int32_t x, int exponent) noexcept {
  const std::int32_t mask = static_cast<std::int32_t>((std::int64_t(1) << exponent) - 1);
  const std::int32_t remainder = x & mask;
  const std::int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

// x times the multiplier, rounded as R (see the top of this file).
template <Rounding R = Rounding::double_rounding>
constexpr std::int32_t requantize(std::int32_t x, QuantizedMultiplier q) noexcept {
  if constexpr (R == Rounding::single_rounding) {
    const int total_shift = 31 - q.shift;  // [1, 62]
    const std::int64_t round = std::int64_t(1) << (total_shift - 1);
    return static_cast<std::int32_t>((std::int64_t(x) * q.multiplier + round) >> total_shift);
  } else {
    const int left = q.shift > 0 ? q.shift : 0, right = q.shift > 0 ? 0 : -q.shift;
    const auto shifted = static_cast<std::int32_t>(static_cast<std::uint32_t>(x) << left);
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(shifted, q.multiplier), right);
  }
}

// An int64 x times the multiplier: TFLite's MultiplyByQuantizedMultiplier(int64_t, ...) of its 16x8
// kernels, the same in both roundings: the multiplier rounded to Q15 (0x7FFF at most), then
// (x * m15 + 2^(14 - shift)) >> (15 - shift), one rounding half up, cast to int32 as TFLite casts
// (two's complement). Its contract: |x| < 2^47 and shift in [-31, 7].
constexpr std::int32_t requantize_s64(std::int64_t x, QuantizedMultiplier q) noexcept {
  const std::int64_t m15 = q.multiplier < 0x7FFF0000 ? (q.multiplier + (std::int32_t(1) << 15)) >> 16 : 0x7FFF;
  const int total_shift = 15 - q.shift;  // [8, 46]
  const std::int64_t r = (x * m15 + (std::int64_t(1) << (total_shift - 1))) >> total_shift;
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<std::uint64_t>(r)));
}

}  // namespace emha

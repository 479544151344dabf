// SPDX-License-Identifier: Apache-2.0
#pragma once
// Softmax of int8 rows, bit for bit TFLite's reference int8 kernel
// (reference_ops::Softmax for int8 in and out, which CMSIS-NN's arm_softmax_s8
// matches): output scale 1/256, zero point -128 (probability p is stored as round(256 p) - 128).
// Per row: d = x - max(row); keys with d < diff_min get -128 (probability 0); the others
// exp(d * input_scale * beta) computed in fixed point: d times the multiplier in Q5.26
// (SoftmaxS8Params), exp in Q0.31 (fixed_point.hpp), the sum in Q12.19, its reciprocal, and
// each exp times it rounded to 1/256.
//
// The parameters come from the exporter (TFLite's PreprocessSoftmaxScaling and
// CalculateInputRadius with 5 integer bits): real = min(beta * input_scale * 2^26, 2^31 - 1)
// (2^30 - 1 with single rounding) as (multiplier, left_shift), and
// diff_min = -floor(31 * 2^26 / 2^left_shift).

#include <cstddef>
#include <cstdint>

#include "emha/kernels/fixed_point.hpp"
#include "emha/kernels/requant.hpp"
#include "emha/kernels/requantize_s8_ref.hpp"

namespace emha {

struct SoftmaxS8Params {
  std::int32_t input_multiplier = 0;  // Q31, [2^30, 2^31)
  std::int32_t input_left_shift = 0;  // >= 0
  std::int32_t diff_min = 0;          // <= 0: differences below it give probability 0
};

namespace detail {
// d * the real multiplier in Q5.26 (TFLite's MultiplyByQuantizedMultiplierGreaterThanOne), for a
// difference d = x - max(row) <= 0.
template <Rounding R>
constexpr std::int32_t softmax_s8_scaled(std::int32_t d, const SoftmaxS8Params& p) noexcept {
  if constexpr (R == Rounding::single_rounding) {
    return requantize<Rounding::single_rounding>(d, QuantizedMultiplier{p.input_multiplier, p.input_left_shift});
  } else {
    const auto shifted = static_cast<std::int32_t>(static_cast<std::uint32_t>(d) << p.input_left_shift);
    return saturating_rounding_doubling_high_mul(shifted, p.input_multiplier);
  }
}
inline constexpr int softmax_s8_diff_bits = 5, softmax_s8_sum_bits = 12;  // Q5.26 differences, Q12.19 sums

// One output byte: exp e (Q0.31) times the reciprocal of the row's sum, rounded to 1/256, - 128.
inline std::int8_t softmax_s8_output(std::int32_t e, std::int32_t inverse, int exponent) noexcept {
  return saturate_s8(rounding_divide_by_pot(fixed_point::mul(inverse, e), exponent) + INT8_MIN);
}
}  // namespace detail

// Scalar reference of softmax_s8_exps (emha/kernels/softmax_s8.hpp, same contract): the row's
// exps from the table, exps[j] = exp[max(x) - x[j]], and their sum in Q12.19 as TFLite's loop
// adds them (rescale<0, 12> of each, rounding half away from zero).
inline std::int32_t softmax_s8_exps_ref(std::size_t n, const std::int8_t* x, const std::int32_t* exp,
                                        std::int32_t* exps) noexcept {
  std::int32_t max = INT8_MIN;
  for (std::size_t j = 0; j < n; ++j) max = x[j] > max ? x[j] : max;
  std::uint32_t sum = 0;  // modulo 2^32, as the kernel's (at most 256 * 2^19 for a table's values)
  for (std::size_t j = 0; j < n; ++j) {
    exps[j] = exp[max - x[j]];
    sum += std::uint32_t(fixed_point::rescale<0, detail::softmax_s8_sum_bits>(exps[j]));
  }
  return static_cast<std::int32_t>(sum);
}

// y[i][j] = TFLite's int8 softmax of row i of x (rows x cols, row strides ldx and ldy).
template <Rounding R = Rounding::double_rounding>
void softmax_s8_ref(std::size_t rows, std::size_t cols, const std::int8_t* x, std::size_t ldx,
                    const SoftmaxS8Params& p, std::int8_t* y, std::size_t ldy) noexcept {
  constexpr int diff_bits = detail::softmax_s8_diff_bits, sum_bits = detail::softmax_s8_sum_bits;
  for (std::size_t i = 0; i < rows; ++i) {
    const std::int8_t* xr = x + i * ldx;
    std::int8_t* yr = y + i * ldy;
    std::int32_t max = INT8_MIN;
    for (std::size_t j = 0; j < cols; ++j) max = xr[j] > max ? xr[j] : max;
    std::int32_t sum = 0;
    for (std::size_t j = 0; j < cols; ++j) {
      const std::int32_t d = xr[j] - max;
      if (d >= p.diff_min)
        sum += fixed_point::rescale<0, sum_bits>(
            fixed_point::exp_on_negative_values<diff_bits>(detail::softmax_s8_scaled<R>(d, p)));
    }
    int bits_over_unit = 0;
    const std::int32_t inverse = fixed_point::reciprocal<sum_bits>(sum, bits_over_unit);
    const int exponent = bits_over_unit + 31 - 8;  // [0, 31]: the sum is at least 1
    for (std::size_t j = 0; j < cols; ++j) {
      const std::int32_t d = xr[j] - max;
      yr[j] = d >= p.diff_min ? detail::softmax_s8_output(
                                    fixed_point::exp_on_negative_values<diff_bits>(detail::softmax_s8_scaled<R>(d, p)),
                                    inverse, exponent)
                              : std::int8_t(INT8_MIN);
    }
  }
}

}  // namespace emha

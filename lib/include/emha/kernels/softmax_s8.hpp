// SPDX-License-Identifier: Apache-2.0
#pragma once
// softmax_s8_ref's bytes with the exps looked up: an int8 row's differences x - max(row) take only
// the 256 values 0 .. -255, so the fixed-point exp of each (the costly part: gemmlowp's
// exp_on_negative_values, about a hundred instructions) is computed once per parameter set, not
// twice per element as TFLite's reference and CMSIS-NN's arm_softmax_s8 do (TFLite's optimized
// int8 softmax keeps such a table too). The rest (the sum, its reciprocal, the products) is the
// reference's arithmetic, so the bytes are the same.

#include <cstddef>
#include <cstdint>

#include "emha/kernels/requantize_s8.hpp"
#include "emha/kernels/softmax_s8_ref.hpp"

namespace emha {

// exp[k] = exp(-k * input scale) in Q0.31 as TFLite computes it, for k = 0 .. keep; the
// differences below -keep (diff_min) give probability 0.
struct SoftmaxS8Table {
  std::int32_t exp[256] = {};
  std::int32_t keep = -1;  // -diff_min, at most 255
};

// Fills t for p (in place: the table is 1 KiB, not for a microcontroller's stack).
template <Rounding R = Rounding::double_rounding>
void softmax_s8_table(const SoftmaxS8Params& p, SoftmaxS8Table& t) noexcept {
  t.keep = -p.diff_min < 255 ? -p.diff_min : 255;
  for (std::int32_t k = 0; k < 256; ++k)
    t.exp[k] = k <= t.keep ? fixed_point::exp_on_negative_values<detail::softmax_s8_diff_bits>(
                                 detail::softmax_s8_scaled<R>(-k, p))
                           : 0;
}

// The first pass of a row's softmax: exps[j] = exp[max(x) - x[j]] for j < n (exp: a table's 256
// entries, SoftmaxS8Table::exp, each in [0, 2^31)), and returned, their sum in Q12.19 as TFLite
// adds them (each rescaled from Q0.31 rounding half away from zero; modulo 2^32). Every variant
// gives softmax_s8_exps_ref's values (Helium: the row's max by VMAXV, the lookups by gathers).
std::int32_t softmax_s8_exps(std::size_t n, const std::int8_t* x, const std::int32_t* exp,
                             std::int32_t* exps) noexcept;

// y = softmax_s8_ref<R>(1, cols, x, p) for t filled by softmax_s8_table<R>(p, t); cols >= 1.
inline void softmax_s8_row(std::size_t cols, const std::int8_t* x, const SoftmaxS8Table& t, std::int8_t* y) noexcept {
  std::int32_t max = INT8_MIN;
  for (std::size_t j = 0; j < cols; ++j) max = x[j] > max ? x[j] : max;
  std::int32_t sum = 0;
  for (std::size_t j = 0; j < cols; ++j) {
    const std::int32_t k = max - x[j];
    if (k <= t.keep) sum += fixed_point::rescale<0, detail::softmax_s8_sum_bits>(t.exp[k]);
  }
  int bits_over_unit = 0;
  const std::int32_t inverse = fixed_point::reciprocal<detail::softmax_s8_sum_bits>(sum, bits_over_unit);
  const int exponent = bits_over_unit + 31 - 8;
  for (std::size_t j = 0; j < cols; ++j) {
    const std::int32_t k = max - x[j];
    y[j] = k <= t.keep ? detail::softmax_s8_output(t.exp[k], inverse, exponent) : std::int8_t(INT8_MIN);
  }
}

// The same bytes with the output pass vectorized: TFLite's output,
// RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(inverse, exp), exponent) - 128 saturated,
// is MultiplyByQuantizedMultiplier(exp, (inverse, -exponent)) with double rounding and zero point
// -128, so the row's exps (0 beyond keep, whose output is -128 either way) are gathered into
// `exps` (cols int32 of scratch) and requantized by requantize_s8, the vector kernel.
inline void softmax_s8_row(std::size_t cols, const std::int8_t* x, const SoftmaxS8Table& t, std::int8_t* y,
                           std::int32_t* exps) noexcept {
  const std::int32_t sum = softmax_s8_exps(cols, x, t.exp, exps);
  int bits_over_unit = 0;
  const std::int32_t inverse = fixed_point::reciprocal<detail::softmax_s8_sum_bits>(sum, bits_over_unit);
  const QuantizedMultiplier q{inverse, -(bits_over_unit + 31 - 8)};
  requantize_s8(cols, exps, nullptr, &q, 0, Rounding::double_rounding, INT8_MIN, y, 1);
}

}  // namespace emha

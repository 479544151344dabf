// SPDX-License-Identifier: Apache-2.0
#pragma once
// int32 fixed-point arithmetic of int8 inference, bit for bit gemmlowp's (its FixedPoint class,
// which TFLite's and CMSIS-NN's int8 softmax use): a value with I integer bits is an int32 raw
// r meaning r / 2^(31 - I) ("Q I.(31 - I)"). A product of Q a and Q b values is a Q (a + b) value
// (saturating_rounding_doubling_high_mul of the raws); sums are plain int32 additions, within
// range by construction.

#include <cstdint>

#include "emha/kernels/requant.hpp"

namespace emha::fixed_point {

// x * 2^Exponent: a left shift saturating at the int32 ends, or a right shift rounded half away
// from zero (gemmlowp's SaturatingRoundingMultiplyByPOT).
template <int Exponent>
constexpr std::int32_t multiply_by_pot(std::int32_t x) noexcept {
  if constexpr (Exponent > 0) {
    constexpr std::int32_t threshold = (std::int32_t(1) << (31 - Exponent)) - 1;
    if (x > threshold) return INT32_MAX;
    if (x < -threshold) return INT32_MIN;
    return static_cast<std::int32_t>(static_cast<std::uint32_t>(x) << Exponent);
  } else if constexpr (Exponent < 0) {
    return rounding_divide_by_pot(x, -Exponent);
  } else {
    return x;
  }
}

// A Q From value as a Q To value (gemmlowp's Rescale).
template <int From, int To>
constexpr std::int32_t rescale(std::int32_t x) noexcept {
  return multiply_by_pot<From - To>(x);
}

constexpr std::int32_t mul(std::int32_t a, std::int32_t b) noexcept {
  return saturating_rounding_doubling_high_mul(a, b);
}

// (a + b) / 2 rounded half away from zero (VRHADD).
constexpr std::int32_t rounding_half_sum(std::int32_t a, std::int32_t b) noexcept {
  const std::int64_t sum = std::int64_t(a) + b;
  return static_cast<std::int32_t>((sum + (sum >= 0 ? 1 : -1)) / 2);
}

// exp(a) for a in [-1/4, 0), Q0.31 in and out: a Taylor expansion around -1/8 to x^4.
constexpr std::int32_t exp_on_interval_between_negative_one_quarter_and_0_excl(std::int32_t a) noexcept {
  constexpr std::int32_t exp_minus_one_eighth = 1895147668, one_third = 715827883;
  const std::int32_t x = a + (std::int32_t(1) << 28);  // a + 1/8
  const std::int32_t x2 = mul(x, x), x3 = mul(x2, x), x4 = mul(x2, x2);
  const std::int32_t x4_over_4 = multiply_by_pot<-2>(x4);
  const std::int32_t x4_over_24_plus_x3_over_6_plus_x2_over_2 = multiply_by_pot<-1>(mul(x4_over_4 + x3, one_third) + x2);
  return exp_minus_one_eighth + mul(exp_minus_one_eighth, x + x4_over_24_plus_x3_over_6_plus_x2_over_2);
}

// exp(a) for a <= 0 given in Q I.(31 - I), as Q0.31: exp of a's part in [-1/4, 0), times
// exp(-2^k) for each bit k of the rest (a barrel shifter over -1/4 .. -16), 0 below -32, 1 at 0.
template <int I>
constexpr std::int32_t exp_on_negative_values(std::int32_t a) noexcept {
  constexpr int fractional_bits = 31 - I;
  constexpr std::int32_t one_quarter = std::int32_t(1) << (fractional_bits - 2);
  const std::int32_t a_mod_quarter_minus_one_quarter = (a & (one_quarter - 1)) - one_quarter;
  std::int32_t result = exp_on_interval_between_negative_one_quarter_and_0_excl(rescale<I, 0>(a_mod_quarter_minus_one_quarter));
  const std::int32_t remainder = a_mod_quarter_minus_one_quarter - a;
  struct Step {
    int exponent;
    std::int32_t exp_minus_two_to_it;  // exp(-2^exponent), Q0.31
  };
  constexpr Step steps[] = {{-2, 1672461947}, {-1, 1302514674}, {0, 790015084}, {1, 290630308},
                            {2, 39332535},    {3, 720401},      {4, 242}};
  for (const Step& s : steps)
    if (I > s.exponent && (remainder & (std::int32_t(1) << (fractional_bits + s.exponent))) != 0)
      result = mul(result, s.exp_minus_two_to_it);
  if constexpr (I > 5) {
    if (a < -(std::int32_t(1) << (36 - I))) result = 0;  // below -32
  }
  return a == 0 ? INT32_MAX : result;
}

// 1 / (1 + a) for a in [0, 1), Q0.31 in and out: three Newton-Raphson steps from 48/17 - 32/17 d
// on d = (1 + a) / 2, in Q2.29.
constexpr std::int32_t one_over_one_plus_x_for_x_in_0_1(std::int32_t a) noexcept {
  constexpr std::int32_t forty_eight_over_17 = 1515870810, minus_32_over_17 = -1010580540, one_q2 = 1 << 29;
  const std::int32_t half_denominator = rounding_half_sum(a, INT32_MAX);
  std::int32_t x = forty_eight_over_17 + mul(half_denominator, minus_32_over_17);
  for (int i = 0; i < 3; ++i) {
    const std::int32_t one_minus_half_denominator_times_x = one_q2 - mul(half_denominator, x);
    x = x + rescale<4, 2>(mul(x, one_minus_half_denominator_times_x));
  }
  return rescale<1, 0>(x);  // x / 2 (Q2.29 read as Q1.30), as Q0.31
}

// 1 / x for x > 0 in Q I.(31 - I): the Q0.31 reciprocal of x scaled into [1, 2), and in
// bits_over_unit the power of two to divide it by (TFLite's GetReciprocal).
template <int I>
constexpr std::int32_t reciprocal(std::int32_t x, int& bits_over_unit) noexcept {
  const int headroom_plus_one = __builtin_clz(static_cast<std::uint32_t>(x));
  bits_over_unit = I - headroom_plus_one;
  const auto shifted_minus_one =
      static_cast<std::int32_t>((static_cast<std::uint32_t>(x) << headroom_plus_one) - (std::uint32_t(1) << 31));
  return one_over_one_plus_x_for_x_in_0_1(shifted_minus_one);
}

}  // namespace emha::fixed_point

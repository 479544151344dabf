// SPDX-License-Identifier: Apache-2.0
#pragma once
// Scalar reference of requantize_s8 (same contract, emha/kernels/requantize_s8.hpp): the oracle of
// its tests and of the full-integer layer's reference pass.

#include <cstddef>
#include <cstdint>

#include "emha/kernels/requantize_s8.hpp"

namespace emha {

namespace detail {
inline std::int8_t saturate_s8(std::int32_t v) noexcept {
  return static_cast<std::int8_t>(v > INT8_MAX ? INT8_MAX : v < INT8_MIN ? INT8_MIN : v);
}

template <Rounding R>
void requantize_s8_rows(std::size_t n, const std::int32_t* acc, const std::int32_t* bias, const QuantizedMultiplier* q,
                        std::size_t q_step, std::int32_t zero_point, std::int8_t* y, std::size_t ldy) noexcept {
  for (std::size_t j = 0; j < n; ++j) {
    const auto sum = static_cast<std::int32_t>(std::uint32_t(acc[j]) + std::uint32_t(bias ? bias[j] : 0));
    y[j * ldy] = saturate_s8(requantize<R>(sum, q[j * q_step]) + zero_point);
  }
}
}  // namespace detail

inline void requantize_s8_ref(std::size_t n, const std::int32_t* acc, const std::int32_t* bias,
                              const QuantizedMultiplier* q, std::size_t q_step, Rounding rounding,
                              std::int32_t zero_point, std::int8_t* y, std::size_t ldy) noexcept {
  if (rounding == Rounding::single_rounding)
    detail::requantize_s8_rows<Rounding::single_rounding>(n, acc, bias, q, q_step, zero_point, y, ldy);
  else
    detail::requantize_s8_rows<Rounding::double_rounding>(n, acc, bias, q, q_step, zero_point, y, ldy);
}

inline void requantize_s8_channels_ref(std::size_t m, std::size_t n, const std::int32_t* acc, std::size_t lda,
                                       const std::int32_t* bias, const QuantizedMultiplier* q, Rounding rounding,
                                       std::int32_t zero_point, std::int8_t* y, std::size_t y_row,
                                       std::size_t y_col) noexcept {
  for (std::size_t i = 0; i < m; ++i)
    requantize_s8_ref(n, acc + i * lda, bias, q, 1, rounding, zero_point, y + i * y_row, y_col);
}

}  // namespace emha

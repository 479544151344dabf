// SPDX-License-Identifier: Apache-2.0
#pragma once
// Scalar reference of requantize_s16 (same contract, emha/kernels/requantize_s16.hpp): the oracle
// of its tests and of the 16x8 layer's reference pass.

#include <cstddef>
#include <cstdint>

#include "emha/kernels/requantize_s16.hpp"

namespace emha {

namespace detail {
inline std::int16_t saturate_s16(std::int32_t v) noexcept {
  return static_cast<std::int16_t>(v > INT16_MAX ? INT16_MAX : v < INT16_MIN ? INT16_MIN : v);
}
}  // namespace detail

inline void requantize_s16_ref(std::size_t n, const std::int64_t* acc, const std::int64_t* bias,
                               const QuantizedMultiplier* q, std::size_t q_step, std::int16_t* y,
                               std::size_t ldy) noexcept {
  for (std::size_t j = 0; j < n; ++j)
    y[j * ldy] = detail::saturate_s16(requantize_s64(acc[j] + (bias ? bias[j] : 0), q[j * q_step]));
}

}  // namespace emha

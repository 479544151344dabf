// SPDX-License-Identifier: Apache-2.0
#pragma once
// int64 sums to int16 outputs: the epilogue of each product of the 16x8 layer
// (emha/attention/mha_s16x8.hpp), as TFLite's 16x8 FULLY_CONNECTED and int16 BATCH_MATMUL end
// theirs (zero points 0).

#include <cstddef>
#include <cstdint>

#include "emha/kernels/requant.hpp"

namespace emha {

// y[j * ldy] = clamp(requantize_s64(acc[j] + bias[j], q[j * q_step]), -32768, 32767) for j < n:
// q_step 1 for a multiplier per channel, 0 for one per tensor; bias may be null (0). Within
// requantize_s64's contract (|acc + bias| < 2^47, shift in [-31, 7]) every variant gives the
// reference's values.
void requantize_s16(std::size_t n, const std::int64_t* acc, const std::int64_t* bias, const QuantizedMultiplier* q,
                    std::size_t q_step, std::int16_t* y, std::size_t ldy) noexcept;

}  // namespace emha

// SPDX-License-Identifier: Apache-2.0
#pragma once
// int32 sums to int8 outputs: the epilogue of each int8 product of the full-integer layer
// (emha/attention/mha_s8.hpp), as TFLite's and CMSIS-NN's kernels end theirs.

#include <cstddef>
#include <cstdint>

#include "emha/kernels/requant.hpp"

namespace emha {

// y[j * ldy] = clamp(zero_point + requantize<rounding>(acc[j] + bias[j], q[j * q_step]), -128, 127)
// for j < n: q_step 1 for a multiplier per channel, 0 for one per tensor; bias may be null (0); the
// sum acc + bias wraps modulo 2^32 (exact where it is in int32). Every variant gives the
// reference's bytes (integer arithmetic; NEON, Helium and AVX2 run double rounding a vector at a
// time; q's multipliers are QuantizedMultiplier's: 0 or [2^30, 2^31)).
void requantize_s8(std::size_t n, const std::int32_t* acc, const std::int32_t* bias, const QuantizedMultiplier* q,
                   std::size_t q_step, Rounding rounding, std::int32_t zero_point, std::int8_t* y,
                   std::size_t ldy) noexcept;

// requantize_s8 of m rows of n channels, a multiplier q[j] per channel j (and a bias[j] where
// bias is not null): y[i * y_row + j * y_col] from acc[i * lda + j] for i < m, j < n (a
// FULLY_CONNECTED's outputs). The same bytes as m calls of requantize_s8 with q_step 1; the
// channels' multipliers are read once for several rows (Helium: three rows a vector of channels).
void requantize_s8_channels(std::size_t m, std::size_t n, const std::int32_t* acc, std::size_t lda,
                            const std::int32_t* bias, const QuantizedMultiplier* q, Rounding rounding,
                            std::int32_t zero_point, std::int8_t* y, std::size_t y_row, std::size_t y_col) noexcept;

}  // namespace emha

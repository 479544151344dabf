// SPDX-License-Identifier: Apache-2.0
#pragma once
// Symmetric int8 rows with one float scale per row (the int8 KvCache: one row is one position's
// d_k values of one K/V head; llama.cpp's q8_0 and ExecuTorch's QuantizedKVCache keep a scale per
// block or per token and head the same way):
//   scale = amax(|x|) / 127 (0 for a row of zeros), q = round_half_even(x / scale) in [-127, 127]
//   (never -128), and back: x' = float(q) * scale, one rounding.

#include <cstddef>
#include <cstdint>

namespace emha {

// q[r][j] and scale[r] of rows r < rows of x [rows x n] (row strides ldx, ldq). Once per appended
// token, not per step: one scalar body for every build (not in lib/src/kernel_list.def).
void quantize_rows_s8(std::size_t rows, std::size_t n, const float* x, std::size_t ldx, std::int8_t* q,
                      std::size_t ldq, float* scale) noexcept;

// y[r][j] = float(q[r][j]) * scale[r] for r < rows, j < n (row strides ldq, ldy): the rows
// quantize_rows_s8 wrote, widened in registers; every variant gives the reference's bits.
void dequantize_rows_s8(std::size_t rows, std::size_t n, const std::int8_t* q, std::size_t ldq,
                        const float* scale, float* y, std::size_t ldy) noexcept;

}  // namespace emha

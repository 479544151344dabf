// SPDX-License-Identifier: Apache-2.0
#pragma once
// Scalar reference of dequantize_rows_s8 (same contract, emha/kernels/quant.hpp): the oracle of
// its tests and RefKernels' kernel.

#include <cstddef>
#include <cstdint>

#include "emha/kernels/quant.hpp"

namespace emha {

inline void dequantize_rows_s8_ref(std::size_t rows, std::size_t n, const std::int8_t* q, std::size_t ldq,
                                   const float* scale, float* y, std::size_t ldy) noexcept {
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < n; ++j) y[r * ldy + j] = float(q[r * ldq + j]) * scale[r];
}

}  // namespace emha

// SPDX-License-Identifier: Apache-2.0
#pragma once
// The products of the 16x8 layer (emha/attention/mha_s16x8.hpp): int16 activations times int8
// weights (the projections) or times int16 activations (Q K^T and P V), with exact int64 sums, as
// TFLite's 16x8 FULLY_CONNECTED and int16 BATCH_MATMUL accumulate (their zero points are 0, so no
// correction follows).

#include <cstddef>
#include <cstdint>

namespace emha {

// c[i][j] = sum_p a[i][p] * b[j][p] for i < m, j < n, p < k: a [m x k] int16, b [n x k] int8, both
// row-major with strides lda, ldb (b is PyTorch's [out, in] weight). Exact for any k below 2^40.
// Every variant gives the reference's values (integers: no order to round).
void gemm_s16x8(std::size_t m, std::size_t n, std::size_t k, const std::int16_t* a, std::size_t lda,
                const std::int8_t* b, std::size_t ldb, std::int64_t* c, std::size_t ldc) noexcept;

// The same with b int16 [n x k] (K's rows, or V^T's). Exact for any k below 2^33.
void gemm_s16(std::size_t m, std::size_t n, std::size_t k, const std::int16_t* a, std::size_t lda,
              const std::int16_t* b, std::size_t ldb, std::int64_t* c, std::size_t ldc) noexcept;

}  // namespace emha

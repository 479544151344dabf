// SPDX-License-Identifier: Apache-2.0
#pragma once
// int8 x int8 products with exact int32 sums: the inner loop of the full-integer layer (the
// projections, Q K^T and P V; emha/attention/mha_s8.hpp), where zero points and requantization
// are applied around it (emha/kernels/matmul_s8_ref.hpp states the arithmetic).

#include <cstddef>
#include <cstdint>

namespace emha {

// c[i][j] = sum_p a[i][p] * b[j][p] for i < m, j < n, p < k (a [m x k], b [n x k]: both
// row-major with strides lda, ldb, so b is the right-hand side transposed, as PyTorch's [out, in]
// weights and K's rows already are). Exact: k <= 2^17 keeps every sum in int32. Every variant
// gives the reference's values (integers: no order to round).
void gemm_s8(std::size_t m, std::size_t n, std::size_t k, const std::int8_t* a, std::size_t lda,
             const std::int8_t* b, std::size_t ldb, std::int32_t* c, std::size_t ldc) noexcept;

// gemm_s8's c, with a buffer of stage_len int16 (any alignment; its contents after the call
// unspecified) where a variant may stage rows of a: the Cortex-M4/M7 and armv6 DSP variant widens
// gemm_s8_stage_rows rows at a time to int16 pairs there, once for every row of b, where
// stage_len >= gemm_s8_stage_len(k); every other variant, and a smaller buffer, runs gemm_s8.
void gemm_s8_staged(std::size_t m, std::size_t n, std::size_t k, const std::int8_t* a, std::size_t lda,
                    const std::int8_t* b, std::size_t ldb, std::int32_t* c, std::size_t ldc, std::int16_t* stage,
                    std::size_t stage_len) noexcept;
inline constexpr std::size_t gemm_s8_stage_rows = 6;
// The stage gemm_s8_staged uses for k: gemm_s8_stage_rows rows of k, and one int16 of alignment.
constexpr std::size_t gemm_s8_stage_len(std::size_t k) noexcept { return gemm_s8_stage_rows * k + 1; }

// sums[i] = sum_p a[i][p] for i < m, p < k (a [m x k], row stride lda): the row sums that carry a
// zero point past gemm_s8's raw products. Exact: k <= 2^24 keeps every sum in int32.
void row_sums_s8(std::size_t m, std::size_t k, const std::int8_t* a, std::size_t lda, std::int32_t* sums) noexcept;

}  // namespace emha

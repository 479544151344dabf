// SPDX-License-Identifier: Apache-2.0
#pragma once
// Scalar references of gemm_s8 and row_sums_s8 (same contracts, emha/kernels/gemm_s8.hpp): the
// oracle of their tests and of the full-integer layer's reference pass.

#include <cstddef>
#include <cstdint>

#include "emha/kernels/gemm_s8.hpp"

namespace emha {

inline void gemm_s8_ref(std::size_t m, std::size_t n, std::size_t k, const std::int8_t* a, std::size_t lda,
                        const std::int8_t* b, std::size_t ldb, std::int32_t* c, std::size_t ldc) noexcept {
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      std::int32_t acc = 0;
      for (std::size_t p = 0; p < k; ++p) acc += std::int32_t(a[i * lda + p]) * b[j * ldb + p];
      c[i * ldc + j] = acc;
    }
}

// gemm_s8_staged's reference: gemm_s8_ref (the stage is the variants' own business).
inline void gemm_s8_staged_ref(std::size_t m, std::size_t n, std::size_t k, const std::int8_t* a, std::size_t lda,
                               const std::int8_t* b, std::size_t ldb, std::int32_t* c, std::size_t ldc,
                               std::int16_t*, std::size_t) noexcept {
  gemm_s8_ref(m, n, k, a, lda, b, ldb, c, ldc);
}

// row_sums_s8's reference.
inline void row_sums_s8_ref(std::size_t m, std::size_t k, const std::int8_t* a, std::size_t lda,
                            std::int32_t* sums) noexcept {
  for (std::size_t i = 0; i < m; ++i) {
    std::int32_t acc = 0;
    for (std::size_t p = 0; p < k; ++p) acc += a[i * lda + p];
    sums[i] = acc;
  }
}

}  // namespace emha

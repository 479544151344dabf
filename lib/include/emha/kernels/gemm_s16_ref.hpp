// SPDX-License-Identifier: Apache-2.0
#pragma once
// Scalar references of gemm_s16x8 and gemm_s16 (same contracts, emha/kernels/gemm_s16.hpp): the
// oracles of their tests and the kernels of the 16x8 layer's reference pass.

#include <cstddef>
#include <cstdint>

#include "emha/kernels/gemm_s16.hpp"

namespace emha {

namespace detail {
template <class B>
void gemm_s16_rows(std::size_t m, std::size_t n, std::size_t k, const std::int16_t* a, std::size_t lda, const B* b,
                   std::size_t ldb, std::int64_t* c, std::size_t ldc) noexcept {
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      std::int64_t acc = 0;
      for (std::size_t p = 0; p < k; ++p) acc += std::int64_t(a[i * lda + p]) * b[j * ldb + p];
      c[i * ldc + j] = acc;
    }
}
}  // namespace detail

inline void gemm_s16x8_ref(std::size_t m, std::size_t n, std::size_t k, const std::int16_t* a, std::size_t lda,
                           const std::int8_t* b, std::size_t ldb, std::int64_t* c, std::size_t ldc) noexcept {
  detail::gemm_s16_rows(m, n, k, a, lda, b, ldb, c, ldc);
}

inline void gemm_s16_ref(std::size_t m, std::size_t n, std::size_t k, const std::int16_t* a, std::size_t lda,
                         const std::int16_t* b, std::size_t ldb, std::int64_t* c, std::size_t ldc) noexcept {
  detail::gemm_s16_rows(m, n, k, a, lda, b, ldb, c, ldc);
}

}  // namespace emha

// SPDX-License-Identifier: Apache-2.0
// gemm_w8a32_rows (emha/kernels/gemm_w8a32.hpp): a product of few rows of A with an int8 B read
// in place and one float scale per row of B (a decode step's scores and context over an int8
// KvCache's rows): gemm_rows.hpp's loops, each vector of B widened as it is loaded and the scale
// applied once per sum (scores: scale_j times the dot product; context: a[p] * scale[p]).

#include <cstdint>

#include "emha/config.hpp"
#include "emha/kernels/gemm_w8a32.hpp"
#include "isa_kernels.hpp"
#include "kernels/gemm_rows.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

void gemm_w8a32_rows(std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda,
                     const std::int8_t* b, std::size_t ldb, const float* b_scale, Trans trans_b, float* c,
                     std::size_t ldc, const GemmOptions& o) noexcept {
  if (m == 0 || n == 0) return;
  EMHA_ASSERT(c && (k == 0 || (a && b && b_scale)) && lda >= k && ldc >= n &&
              ldb >= (trans_b == Trans::none ? n : k));
  if (trans_b == Trans::transpose)
    rows::nt(m, n, k, a, lda, b, ldb, rows::RowScale{b_scale}, c, ldc, o);
  else
    rows::nn(m, n, k, a, lda, b, ldb, rows::RowScale{b_scale}, c, ldc, o);
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

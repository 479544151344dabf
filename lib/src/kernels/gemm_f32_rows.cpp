// SPDX-License-Identifier: Apache-2.0
// gemm_f32_rows (emha/kernels/gemm.hpp): a product of few rows of A that reads a float B in place
// (a decode step's scores and context over a KvCache's rows): gemm_rows.hpp's loops, unscaled.

#include "emha/config.hpp"
#include "emha/kernels/gemm.hpp"
#include "isa_kernels.hpp"
#include "kernels/gemm_rows.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

void gemm_f32_rows(std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda,
                   const float* b, std::size_t ldb, Trans trans_b, float* c, std::size_t ldc,
                   const GemmOptions& o) noexcept {
  if (m == 0 || n == 0) return;
  EMHA_ASSERT(c && (k == 0 || (a && b)) && lda >= k && ldc >= n &&
              ldb >= (trans_b == Trans::none ? n : k));
  if (trans_b == Trans::transpose)
    rows::nt(m, n, k, a, lda, b, ldb, rows::NoScale{}, c, ldc, o);
  else
    rows::nn(m, n, k, a, lda, b, ldb, rows::NoScale{}, c, ldc, o);
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

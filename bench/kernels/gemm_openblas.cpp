// SPDX-License-Identifier: Apache-2.0
// OpenBLAS peer of emha::gemm_f32 (compiled only when OpenBLAS was found).

#include <cblas.h>

#include "kernels/gemm_peers.hpp"

namespace emha_bench {

void gemm_openblas(std::size_t m, std::size_t n, std::size_t k, const float* a, const float* b,
                   bool b_transposed, float* c) noexcept {
  const auto M = static_cast<blasint>(m), N = static_cast<blasint>(n), K = static_cast<blasint>(k);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, b_transposed ? CblasTrans : CblasNoTrans, M, N, K,
              1.0f, a, K, b, b_transposed ? K : N, 0.0f, c, N);
}

}  // namespace emha_bench

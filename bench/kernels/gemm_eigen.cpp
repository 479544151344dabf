// SPDX-License-Identifier: Apache-2.0
// Eigen peer of emha::gemm_f32 (compiled only when Eigen was found, with the library's ISA flags:
// -mavx2 -mfma on x86, so Eigen uses the same vector width as emha).

#include <Eigen/Core>

#include "kernels/gemm_peers.hpp"

namespace emha_bench {

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

void gemm_eigen(std::size_t m, std::size_t n, std::size_t k, const float* a, const float* b,
                bool b_transposed, float* c) noexcept {
  const auto M = Eigen::Index(m), N = Eigen::Index(n), K = Eigen::Index(k);
  Eigen::Map<const RowMajor> A(a, M, K);
  Eigen::Map<RowMajor> C(c, M, N);
  if (b_transposed) {
    C.noalias() = A * Eigen::Map<const RowMajor>(b, N, K).transpose();
  } else {
    C.noalias() = A * Eigen::Map<const RowMajor>(b, K, N);
  }
}

}  // namespace emha_bench

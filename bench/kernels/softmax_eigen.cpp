// SPDX-License-Identifier: Apache-2.0
// Eigen peer of emha::softmax_f32 (compiled with the library's ISA flags when Eigen was found).

#include <Eigen/Core>

#include "kernels/softmax_peers.hpp"

namespace emha_bench {

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

void softmax_eigen(std::size_t rows, std::size_t n, const float* x, float scale, float* y) noexcept {
  Eigen::Map<const RowMajor> X(x, Eigen::Index(rows), Eigen::Index(n));
  Eigen::Map<RowMajor> Y(y, Eigen::Index(rows), Eigen::Index(n));
  Y = scale * X;
  const Eigen::VectorXf row_max = Y.rowwise().maxCoeff();  // named: Y is overwritten below
  Y = (Y.colwise() - row_max).array().exp();
  const Eigen::VectorXf row_sum = Y.rowwise().sum();
  Y.array().colwise() /= row_sum.array();
}

}  // namespace emha_bench

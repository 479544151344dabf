// SPDX-License-Identifier: Apache-2.0
// Plain Eigen multi-head self-attention (see eigen_mha.hpp). Compiled with the library's ISA
// flags (-mavx2 -mfma on x86), single-threaded.

#include "attention/eigen_mha.hpp"

#include <Eigen/Core>

#include <cmath>

namespace emha_bench {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowVector = Eigen::RowVectorXf;

void eigen_mha_forward(std::size_t seq, std::size_t d_model, std::size_t heads,
                       const TorchMhaWeights& w, const float* x, float* y) {
  const Eigen::Index S = Eigen::Index(seq), D = Eigen::Index(d_model), H = Eigen::Index(heads);
  const Eigen::Index dk = D / H;
  const float scale = 1.0f / std::sqrt(float(dk));

  Eigen::Map<const Matrix> X(x, S, D);
  Eigen::Map<const Matrix> w_in(w.in_proj_weight, 3 * D, D);
  Eigen::Map<const RowVector> b_in(w.in_proj_bias, 3 * D);
  Eigen::Map<const Matrix> w_out(w.out_proj_weight, D, D);
  Eigen::Map<const RowVector> b_out(w.out_proj_bias, D);

  // Q | K | V = X W_in^T + b_in: [S, 3D].
  Matrix qkv = X * w_in.transpose();
  qkv.rowwise() += b_in;

  // Per head: softmax(scale Q_h K_h^T) V_h into the head's columns of the context.
  Matrix context(S, D);
  Matrix scores(S, S);
  for (Eigen::Index h = 0; h < H; ++h) {
    const auto q = qkv.middleCols(h * dk, dk);
    const auto k = qkv.middleCols(D + h * dk, dk);
    const auto v = qkv.middleCols(2 * D + h * dk, dk);
    scores.noalias() = (q * k.transpose()) * scale;
    const Eigen::VectorXf row_max = scores.rowwise().maxCoeff();
    scores = (scores.colwise() - row_max).array().exp();
    const Eigen::VectorXf row_sum = scores.rowwise().sum();
    scores.array().colwise() /= row_sum.array();
    context.middleCols(h * dk, dk).noalias() = scores * v;
  }

  // Y = context W_out^T + b_out: [S, D].
  Eigen::Map<Matrix> Y(y, S, D);
  Y.noalias() = context * w_out.transpose();
  Y.rowwise() += b_out;
}

}  // namespace emha_bench

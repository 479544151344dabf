// SPDX-License-Identifier: Apache-2.0
#pragma once
// The Eigen peer of emha::MultiHeadAttention::forward: batch 1, self-attention, no mask, weights in
// torch.nn.MultiheadAttention's layout. Written the way a competent engineer would write it with
// Eigen, without special tuning: Eigen matrices, one score matrix per head, softmax with array
// ops, temporaries on the heap (eigen_mha.cpp). Compiled only when Eigen was found: call it under
// `if constexpr (emha_bench::have_eigen)` (support/peers.hpp). The interface has no Eigen types so
// that callers compile without Eigen.

#include <cstddef>

namespace emha_bench {

// Row-major float arrays, PyTorch state_dict names and shapes (D = d_model).
struct TorchMhaWeights {
  const float* in_proj_weight;   // [3D, D]: W_q, W_k, W_v stacked
  const float* in_proj_bias;     // [3D]
  const float* out_proj_weight;  // [D, D]
  const float* out_proj_bias;    // [D]
};

// y = MHA(x, x, x): x, y [seq, d_model] row-major; d_model divisible by heads; scores scaled by
// 1/sqrt(d_model / heads). y must not overlap x.
void eigen_mha_forward(std::size_t seq, std::size_t d_model, std::size_t heads,
                       const TorchMhaWeights& w, const float* x, float* y);

}  // namespace emha_bench

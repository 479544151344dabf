// SPDX-License-Identifier: Apache-2.0
#pragma once
// Softmax peer timed beside emha::softmax_f32 in bench_softmax.cpp (compiled only when Eigen was
// found; call it under `if constexpr (emha_bench::have_eigen)`).

#include <cstddef>

namespace emha_bench {

// y = row-wise softmax(scale * x); x, y: [rows x n], row-major, contiguous. Eigen array ops, the
// way the Eigen MHA peer (attention/eigen_mha.cpp) does it. softmax_eigen.cpp.
void softmax_eigen(std::size_t rows, std::size_t n, const float* x, float scale, float* y) noexcept;

}  // namespace emha_bench

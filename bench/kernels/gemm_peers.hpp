// SPDX-License-Identifier: Apache-2.0
#pragma once
// GEMM peers timed beside emha::gemm_f32 in bench_gemm.cpp. Row-major, contiguous, f32,
// single-threaded:
//   c[m x n] = a[m x k] * b[k x n]      (b_transposed = false: emha::Trans::none)
//   c[m x n] = a[m x k] * b[n x k]^T    (b_transposed = true:  emha::Trans::transpose, x W^T)
// A peer's file is compiled only when its library was found; call it under
// `if constexpr (emha_bench::have_<peer>)` (support/peers.hpp).

#include <cstddef>

namespace emha_bench {

// cblas_sgemm (OpenBLAS, 1 thread: init_peers() set it). gemm_openblas.cpp.
void gemm_openblas(std::size_t m, std::size_t n, std::size_t k, const float* a, const float* b,
                   bool b_transposed, float* c) noexcept;

// Eigen::Map of the row-major operands, c.noalias() = a * b (or b.transpose()). gemm_eigen.cpp.
void gemm_eigen(std::size_t m, std::size_t n, std::size_t k, const float* a, const float* b,
                bool b_transposed, float* c) noexcept;

}  // namespace emha_bench

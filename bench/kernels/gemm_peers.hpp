// SPDX-License-Identifier: Apache-2.0
#pragma once
// GEMM peers timed beside emha::gemm_f32 in bench_gemm.cpp. Row-major, contiguous, f32,
// single-threaded:
//   c[m x n] = a[m x k] * b[k x n]      (b_transposed = false: emha::Trans::none)
//   c[m x n] = a[m x k] * b[n x k]^T    (b_transposed = true:  emha::Trans::transpose, x W^T)
// A peer's file is compiled only when its library was found; call it under
// `if constexpr (emha_bench::have_<peer>)` (support/peers.hpp).

#include <cstddef>
#include <memory>

namespace emha_bench {

// cblas_sgemm (OpenBLAS, 1 thread: init_peers() set it). gemm_openblas.cpp.
void gemm_openblas(std::size_t m, std::size_t n, std::size_t k, const float* a, const float* b,
                   bool b_transposed, float* c) noexcept;

// Eigen::Map of the row-major operands, c.noalias() = a * b (or b.transpose()). gemm_eigen.cpp.
void gemm_eigen(std::size_t m, std::size_t n, std::size_t k, const float* a, const float* b,
                bool b_transposed, float* c) noexcept;

// A peer whose GEMM is an object created once per shape and operands, outside the timed loop
// (oneDNN's primitive, XNNPACK's operator), then run on the same a, b and c many times.
class PreparedGemm {
 public:
  virtual ~PreparedGemm() = default;
  // Computes c from a and b as given to the prepare_* call; false on a library error.
  virtual bool run() noexcept = 0;
};

// dnnl::matmul on plain row-major f32 memory (b as [n x k] or [k x n], no reordered weights),
// its primitive and argument map built here; CPU engine, one thread (init_peers()). Null on a
// library error. gemm_onednn.cpp.
std::unique_ptr<PreparedGemm> prepare_onednn(std::size_t m, std::size_t n, std::size_t k,
                                             const float* a, const float* b, bool b_transposed,
                                             float* c);

// XNNPACK's fully-connected operator, f32, created (weights packed) and set up here with batch
// m, kernel b ([n x k] as an [output x input] kernel; XNN_FLAG_TRANSPOSE_WEIGHTS for [k x n]),
// no bias, no clamping, no threadpool (the caller's thread). It reads a padded copy of a
// (XNNPACK may read XNN_EXTRA_BYTES past its input). Null on a library error. gemm_xnnpack.cpp.
std::unique_ptr<PreparedGemm> prepare_xnnpack(std::size_t m, std::size_t n, std::size_t k,
                                              const float* a, const float* b, bool b_transposed,
                                              float* c);

}  // namespace emha_bench

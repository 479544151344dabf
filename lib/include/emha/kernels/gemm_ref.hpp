// SPDX-License-Identifier: Apache-2.0
#pragma once
// Scalar reference of gemm_f32: the test oracle. Exactly what it computes:
//   for i < m, j < n:  acc = sum_{p<k} a[i*lda + p] * opb(p, j)        (in order p = 0..k-1; with
//                      options.k_blocks, each block of gemm_k_block k's from zero, then added)
//                      c[i*ldc + j] = alpha * acc + bias[j] + (beta != 0 ? beta * c[i*ldc + j] : 0)
// with opb(p, j) = b[p*ldb + j] (Trans::none) or b[j*ldb + p] (Trans::transpose).

#include <cstddef>

#include "emha/arena.hpp"
#include "emha/kernels/gemm.hpp"

namespace emha {

// Always inlined: a kernel variant's reference path (RefKernels) calls it from two places, and an
// out-of-line copy compiled with one variant's flags could be the one every variant links
// (tests/isa_symbols.sh).
template <class Acc = float>
[[gnu::always_inline]] inline void gemm_f32_ref(std::size_t m, std::size_t n, std::size_t k,
                  const float* a, std::size_t lda,
                  const float* b, std::size_t ldb, Trans trans_b,
                  float* c, std::size_t ldc, const GemmOptions& options = {}) noexcept {
  const std::size_t kb = options.k_blocks ? gemm_k_block : k;
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      Acc acc = 0;
      for (std::size_t p0 = 0; p0 < k; p0 += kb) {
        Acc block = 0;
        for (std::size_t p = p0; p < k && p < p0 + kb; ++p) {
          const float bv = trans_b == Trans::none ? b[p * ldb + j] : b[j * ldb + p];
          block += Acc(a[i * lda + p]) * Acc(bv);
        }
        acc += block;
      }
      Acc v = Acc(options.alpha) * acc;
      if (options.bias) v += Acc(options.bias[j]);
      if (options.beta != 0.0f) v += Acc(options.beta) * Acc(c[i * ldc + j]);
      c[i * ldc + j] = static_cast<float>(v);
    }
  }
}

// gemm_f32's signature: the reference needs no scratch and fails on nothing.
template <class Acc = float>
Status gemm_f32_ref(std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda,
                    const float* b, std::size_t ldb, Trans trans_b, float* c, std::size_t ldc,
                    ArenaRef& /*scratch*/, const GemmOptions& options) noexcept {
  gemm_f32_ref<Acc>(m, n, k, a, lda, b, ldb, trans_b, c, ldc, options);
  return Status::ok;
}

// gemm_f32_rows's reference: gemm_f32_ref without options.k_blocks (gemm_f32_rows ignores it).
template <class Acc = float>
void gemm_f32_rows_ref(std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda,
                       const float* b, std::size_t ldb, Trans trans_b, float* c, std::size_t ldc,
                       const GemmOptions& options = {}) noexcept {
  GemmOptions o = options;
  o.k_blocks = false;
  gemm_f32_ref<Acc>(m, n, k, a, lda, b, ldb, trans_b, c, ldc, o);
}

}  // namespace emha

// SPDX-License-Identifier: Apache-2.0
#pragma once
// Scalar reference of gemm_w8a32: the test oracle. Exactly what it computes:
//   for i < m, j < n:  acc = sum_{p<k} a[i*lda + p] * float(w[j*ldw + p])   (in order p = 0..k-1;
//                      with options.k_blocks, each block of gemm_k_block k's from zero, then added)
//                      c[i*ldc + j] = alpha * (scale[j] * acc) + bias[j]
//                                     + (beta != 0 ? beta * c[i*ldc + j] : 0)
// With Acc = double: float64 of F.linear(x, w.float() * scale[:, None], b) (alpha = 1, beta = 0).

#include <cstddef>
#include <cstdint>

#include "emha/arena.hpp"
#include "emha/kernels/gemm_w8a32.hpp"

namespace emha {

// Always inlined, as gemm_f32_ref (a variant's out-of-line copy could be the one all link).
template <class Acc = float>
[[gnu::always_inline]] inline void gemm_w8a32_ref(std::size_t m, std::size_t n, std::size_t k,
                                                  const float* a, std::size_t lda,
                                                  const std::int8_t* w, std::size_t ldw,
                                                  const float* scale, float* c, std::size_t ldc,
                                                  const GemmOptions& options = {}) noexcept {
  const std::size_t kb = options.k_blocks ? gemm_k_block : k;
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      Acc acc = 0;
      for (std::size_t p0 = 0; p0 < k; p0 += kb) {
        Acc block = 0;
        for (std::size_t p = p0; p < k && p < p0 + kb; ++p)
          block += Acc(a[i * lda + p]) * Acc(w[j * ldw + p]);
        acc += block;
      }
      Acc v = k != 0 ? Acc(options.alpha) * (Acc(scale[j]) * acc) : Acc(0);
      if (options.bias) v += Acc(options.bias[j]);
      if (options.beta != 0.0f) v += Acc(options.beta) * Acc(c[i * ldc + j]);
      c[i * ldc + j] = static_cast<float>(v);
    }
  }
}

// gemm_w8a32's signature: the reference needs no scratch and fails on nothing.
template <class Acc = float>
Status gemm_w8a32_ref(std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda,
                      const std::int8_t* w, std::size_t ldw, const float* scale, float* c,
                      std::size_t ldc, ArenaRef& /*scratch*/, const GemmOptions& options) noexcept {
  gemm_w8a32_ref<Acc>(m, n, k, a, lda, w, ldw, scale, c, ldc, options);
  return Status::ok;
}

}  // namespace emha

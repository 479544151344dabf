// SPDX-License-Identifier: Apache-2.0
#pragma once
// Scalar reference of gemm_w8a32: the test oracle. Exactly what it computes:
//   for i < m, j < n:  wd(p) = float(w[j*ldw + p]) * scale[j]   (a float product: rounded to float)
//                      acc = sum_{p<k} a[i*lda + p] * wd(p)   (in order p = 0..k-1; with
//                      options.k_blocks, each block of gemm_k_block k's from zero, then added)
//                      c[i*ldc + j] = alpha * acc + bias[j] + (beta != 0 ? beta * c[i*ldc + j] : 0)
// gemm_f32_ref's order on the dequantized weights wd = w.float() * scale[:, None] (float32, as
// PyTorch dequantizes). With Acc = double: float64 of F.linear(x, wd, b) (alpha = 1, beta = 0).

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
          block += Acc(a[i * lda + p]) * Acc(float(w[j * ldw + p]) * scale[j]);
        acc += block;
      }
      Acc v = Acc(options.alpha) * acc;
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

// Scalar reference of gemm_w8a32_rows, in its formula's order: transpose, acc = sum over p of
// a * b in order, then b_scale[j] * acc; none, acc = sum over p of (a * b_scale[p]) * b in
// order (the product rounded to float for Acc = float, exact for double); then the epilogue.
template <class Acc = float>
[[gnu::always_inline]] inline void gemm_w8a32_rows_ref(std::size_t m, std::size_t n, std::size_t k,
                                                       const float* a, std::size_t lda, const std::int8_t* b,
                                                       std::size_t ldb, const float* b_scale, Trans trans_b,
                                                       float* c, std::size_t ldc,
                                                       const GemmOptions& options = {}) noexcept {
  const bool t = trans_b == Trans::transpose;
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      Acc acc = 0;
      for (std::size_t p = 0; p < k; ++p) {
        if (t)
          acc += Acc(a[i * lda + p]) * Acc(b[j * ldb + p]);
        else
          acc += Acc(Acc(a[i * lda + p]) * Acc(b_scale[p])) * Acc(b[p * ldb + j]);
      }
      if (t) acc = Acc(b_scale[j]) * acc;
      Acc v = Acc(options.alpha) * acc;
      if (options.bias) v += Acc(options.bias[j]);
      if (options.beta != 0.0f) v += Acc(options.beta) * Acc(c[i * ldc + j]);
      c[i * ldc + j] = static_cast<float>(v);
    }
  }
}

}  // namespace emha

// SPDX-License-Identifier: Apache-2.0
#pragma once
// int8 products with int32 sums and fixed-point requantization, bit for bit TFLite's reference
// kernels (and CMSIS-NN's, which match them): the projections (FULLY_CONNECTED, weights per output
// channel) and Q K^T and P V (BATCH_MATMUL, per tensor). Activations are int8 with a zero point,
// weights symmetric (zero point 0, [-127, 127]); each output is
//   clamp(zero_point_out + requantize(sum_k (a - zero_point_a) (b - zero_point_b) [+ bias]), -128, 127).
// The sums are exact int32 (k up to 2^15 keeps them in range).

#include <cstddef>
#include <cstdint>

#include "emha/kernels/requant.hpp"
#include "emha/kernels/requantize_s8_ref.hpp"

namespace emha {

// y [m x n] = x [m x k] W^T (W [n x k]: PyTorch's [out, in]) + bias, requantized per output channel
// j by q[j] (TFLite's FullyConnectedPerChannel; bias int32 or null).
template <Rounding R = Rounding::double_rounding>
void fully_connected_s8_ref(std::size_t m, std::size_t n, std::size_t k, const std::int8_t* x, std::size_t ldx,
                            std::int32_t zero_point_x, const std::int8_t* w, std::size_t ldw, const std::int32_t* bias,
                            const QuantizedMultiplier* q, std::int32_t zero_point_y, std::int8_t* y,
                            std::size_t ldy) noexcept {
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      std::int32_t acc = 0;
      for (std::size_t p = 0; p < k; ++p) acc += std::int32_t(w[j * ldw + p]) * (x[i * ldx + p] - zero_point_x);
      if (bias) acc += bias[j];
      y[i * ldy + j] = detail::saturate_s8(requantize<R>(acc, q[j]) + zero_point_y);
    }
}

// c [m x n] = a [m x k] b^T with b given as [n x k] rows (the right-hand side transposed, as
// CMSIS-NN's arm_batch_matmul_s8 takes it: K's rows for Q K^T, V^T's for P V), requantized by q
// (TFLite's BatchMatMul for int8).
template <Rounding R = Rounding::double_rounding>
void batch_matmul_s8_ref(std::size_t m, std::size_t n, std::size_t k, const std::int8_t* a, std::size_t lda,
                         std::int32_t zero_point_a, const std::int8_t* b, std::size_t ldb, std::int32_t zero_point_b,
                         QuantizedMultiplier q, std::int32_t zero_point_c, std::int8_t* c, std::size_t ldc) noexcept {
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      std::int32_t acc = 0;
      for (std::size_t p = 0; p < k; ++p)
        acc += (a[i * lda + p] - zero_point_a) * (b[j * ldb + p] - zero_point_b);
      c[i * ldc + j] = detail::saturate_s8(requantize<R>(acc, q) + zero_point_c);
    }
}

}  // namespace emha

// SPDX-License-Identifier: Apache-2.0
#pragma once
// Row normalizations around attention, over the last dimension (n floats per row):
//   layer_norm_f32: y = (x - mean) / sqrt(var + eps) * gamma + beta   (torch.nn.LayerNorm: var is
//                   the biased variance, eps inside the root; gamma/beta null = no affine, i.e.
//                   elementwise_affine=False, or bias=False when only beta is null)
//   rms_norm_f32:   y = x / sqrt(mean(x^2) + eps) * gamma              (HF LlamaRMSNorm,
//                   torch.nn.RMSNorm; gamma null = no weight)
// x: [rows x n], ldx >= n; y: [rows x n], ldy >= n; strides in elements. x == y (in place) is
// allowed, other overlaps are not. Statistics are float32 sums in the kernel's lanes, two passes
// (mean, then the mean of squared deviations), never E[x^2] - E[x]^2. A NaN in a row makes that
// row's outputs NaN; an inf makes LayerNorm's row NaN and RMSNorm's row x / inf (0, NaN at the
// inf): nothing finite-looking is made up. n == 0 or rows == 0 writes nothing.

#include <cstddef>

namespace emha {

void layer_norm_f32(std::size_t rows, std::size_t n, const float* x, std::size_t ldx, float* y,
                    std::size_t ldy, const float* gamma, const float* beta, float eps) noexcept;

void rms_norm_f32(std::size_t rows, std::size_t n, const float* x, std::size_t ldx, float* y,
                  std::size_t ldy, const float* gamma, float eps) noexcept;

}  // namespace emha

// SPDX-License-Identifier: Apache-2.0
#pragma once
// Row-wise softmax: y[i][j] = exp(z[i][j] - max_j z[i][.]) / sum_j exp(z[i][j] - max_j z[i][.])
// with z[i][j] = scale * x[i][j] (+ mask[i * ldmask + j]).
//   - a row whose every z is -inf gives all zeros (fully masked query), never NaN;
//   - a NaN anywhere in a row's z makes that whole row NaN (never hidden);
//   - x == y (in place) is allowed; other overlaps are not.

#include <cstddef>

namespace emha {

struct SoftmaxOptions {
  float scale = 1.0f;
  const float* mask = nullptr;   // additive mask, row i at mask + i * ldmask; null = none
  std::size_t ldmask = 0;        // 0 broadcasts one mask row to every row
};

// x: [rows x n], ldx >= n; y: [rows x n], ldy >= n. Strides in elements.
void softmax_f32(std::size_t rows, std::size_t n, const float* x, std::size_t ldx, float* y,
                 std::size_t ldy, const SoftmaxOptions& options = {}) noexcept;

// Online (streaming) softmax for fused attention: keys arrive in blocks and the [rows x S_kv]
// probabilities never exist at once. Per row i the caller keeps a running max m[i] (start -inf),
// sum l[i] (start 0) and accumulator o[i][0..o_cols) of sum_j p_ij * v_j.
//
// update, for the next block of scores s [rows x n] (scaled and masked already):
//   m' = max(m, max_j s_ij);  c = exp(m - m');  s_ij <- exp(s_ij - m');
//   l <- l * c + sum_j s_ij;  o_i <- o_i * c;  m <- m'
// Rows with no unmasked key so far (m' = -inf) get s_i = 0 and keep l = 0. The caller then adds
// s * V_block to o. While m = -inf, o is neither read nor written (no rescale): the caller may
// leave it uninitialized and store the first block's s * V with beta = 0. A NaN score makes l
// NaN, so the row's output is NaN (never hidden).
void softmax_online_update_f32(std::size_t rows, std::size_t n, float* s, std::size_t lds,
                               float* row_max, float* row_sum, float* o, std::size_t ldo,
                               std::size_t o_cols) noexcept;

// finish: o_i <- o_i / l_i; a row with l_i == 0 (every key masked) becomes 0.
void softmax_online_finish_f32(std::size_t rows, std::size_t o_cols, const float* row_sum,
                               float* o, std::size_t ldo) noexcept;

}  // namespace emha

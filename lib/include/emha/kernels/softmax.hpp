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

}  // namespace emha

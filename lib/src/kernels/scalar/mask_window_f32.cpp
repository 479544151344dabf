// SPDX-License-Identifier: Apache-2.0
// mask_window_f32 (emha/kernels/mask.hpp): compiled once, one scalar body (no instruction-set
// variants): like the causal mask, it stores -inf over a computed column range of each row.

#include "emha/kernels/mask.hpp"

namespace emha {
namespace {

// Keys of row i that are `window` or more positions behind it: [0, count), count = i + diagonal
// - window + 1 clamped to [0, cols], without a signed sum that could overflow.
std::size_t behind_window(std::size_t i, std::ptrdiff_t diagonal, std::size_t window,
                          std::size_t cols) noexcept {
  std::size_t reach;  // i + diagonal + 1: one past the row's own position, when positive
  if (diagonal >= 0) {
    reach = i + 1 + static_cast<std::size_t>(diagonal);
  } else {
    const std::size_t back = static_cast<std::size_t>(-(diagonal + 1)) + 1;  // -diagonal
    if (i + 1 <= back) return 0;
    reach = i + 1 - back;
  }
  if (reach <= window) return 0;
  return reach - window < cols ? reach - window : cols;
}

}  // namespace

void mask_window_f32(std::size_t rows, std::size_t cols, std::ptrdiff_t diagonal, std::size_t window,
                     float* s, std::size_t lds) noexcept {
  for (std::size_t i = 0; i < rows; ++i) {
    float* row = s + i * lds;
    const std::size_t count = behind_window(i, diagonal, window, cols);
    for (std::size_t j = 0; j < count; ++j) row[j] = mask_neg_inf;
  }
}

}  // namespace emha

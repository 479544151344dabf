// SPDX-License-Identifier: Apache-2.0
// mask_attend_f32 (emha/kernels/mask.hpp): compiled once, one scalar body (no instruction-set
// variants): its mask is read with a column stride (labml's [S_q|1, S_kv, B|1] layout).

#include "emha/kernels/mask.hpp"

namespace emha {

void mask_attend_f32(std::size_t rows, std::size_t cols, const bool* keep, std::size_t ld_row,
                     std::size_t ld_col, float* s, std::size_t lds) noexcept {
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j)
      if (!keep[i * ld_row + j * ld_col]) s[i * lds + j] = mask_neg_inf;
}

}  // namespace emha

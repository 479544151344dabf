// SPDX-License-Identifier: Apache-2.0
#pragma once
// Scalar references of the mask kernels in mask.hpp: the same contracts written as plain loops.

#include <cstddef>

#include "emha/kernels/mask.hpp"

namespace emha {

// j > i + diagonal, compared without forming i + diagonal (which can overflow ptrdiff_t).
inline void mask_causal_f32_ref(std::size_t rows, std::size_t cols, std::ptrdiff_t diagonal,
                                float* s, std::size_t lds) noexcept {
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j) {
      const bool masked = diagonal >= 0
                              ? j > i && j - i > static_cast<std::size_t>(diagonal)
                              : j > i || i - j < static_cast<std::size_t>(-(diagonal + 1)) + 1;
      if (masked) s[i * lds + j] = mask_neg_inf;
    }
}

// (i + diagonal) - j >= window, in long double (exact for every size and offset here).
inline void mask_window_f32_ref(std::size_t rows, std::size_t cols, std::ptrdiff_t diagonal,
                                std::size_t window, float* s, std::size_t lds) noexcept {
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j)
      if ((long double)i + (long double)diagonal - (long double)j >= (long double)window)
        s[i * lds + j] = mask_neg_inf;
}

inline void mask_key_valid_f32_ref(std::size_t rows, std::size_t cols, std::size_t valid,
                                   float* s, std::size_t lds) noexcept {
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = valid; j < cols; ++j) s[i * lds + j] = mask_neg_inf;
}

inline void mask_key_ignore_f32_ref(std::size_t rows, std::size_t cols, const bool* ignore,
                                    float* s, std::size_t lds) noexcept {
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j)
      if (ignore[j]) s[i * lds + j] = mask_neg_inf;
}

inline void mask_bool_f32_ref(std::size_t rows, std::size_t cols, const bool* masked,
                              std::size_t ldm, float* s, std::size_t lds) noexcept {
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j)
      if (masked[i * ldm + j]) s[i * lds + j] = mask_neg_inf;
}

inline void mask_bool_to_additive_f32_ref(std::size_t rows, std::size_t cols, const bool* masked,
                                          std::size_t ldm, float* out, std::size_t ldo) noexcept {
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j) out[i * ldo + j] = masked[i * ldm + j] ? mask_neg_inf : 0.0f;
}

inline void mask_add_f32_ref(std::size_t rows, std::size_t cols, const float* add,
                             std::size_t ldm, float* s, std::size_t lds) noexcept {
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j) s[i * lds + j] += add[i * ldm + j];
}

inline void mask_alibi_f32_ref(std::size_t rows, std::size_t cols, std::ptrdiff_t diagonal,
                               float slope, float* s, std::size_t lds) noexcept {
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j) {
      const std::ptrdiff_t d = std::ptrdiff_t(i) + diagonal - std::ptrdiff_t(j);
      const float distance = float(d < 0 ? -d : d);
      s[i * lds + j] += -slope * distance;
    }
}

}  // namespace emha

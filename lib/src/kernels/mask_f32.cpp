// SPDX-License-Identifier: Apache-2.0
// Mask kernels: masking only ever writes -inf or adds, so they are stores and adds over rows;
// the causal and length masks fill a computed column range instead of testing every element.

#include "emha/config.hpp"
#include "emha/kernels/mask.hpp"
#include "isa_kernels.hpp"
#include "simd_arch.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {
namespace {

void fill_neg_inf(float* s, std::size_t count) noexcept {
  for (std::size_t j = 0; j < count; ++j) s[j] = mask_neg_inf;
}

// First masked key of row i, i + diagonal + 1 clamped to [0, cols], without a signed sum that
// could overflow (diagonal may be anywhere in ptrdiff_t's range).
std::size_t first_causal_masked(std::size_t i, std::ptrdiff_t diagonal, std::size_t cols) noexcept {
  if (diagonal >= 0) {
    const std::size_t d = static_cast<std::size_t>(diagonal);
    return d >= cols || i >= cols - d - 1 ? cols : i + d + 1;
  }
  const std::size_t behind = static_cast<std::size_t>(-(diagonal + 1)) + 1;  // -diagonal
  const std::size_t first = i >= behind ? i - behind + 1 : 0;
  return first < cols ? first : cols;
}

}  // namespace

void mask_causal_f32(std::size_t rows, std::size_t cols, std::ptrdiff_t diagonal, float* s,
                     std::size_t lds) noexcept {
  EMHA_ASSERT(rows == 0 || (s && lds >= cols));
  for (std::size_t i = 0; i < rows; ++i) {
    const std::size_t from = first_causal_masked(i, diagonal, cols);
    fill_neg_inf(s + i * lds + from, cols - from);
  }
}

void mask_key_valid_f32(std::size_t rows, std::size_t cols, std::size_t valid, float* s,
                        std::size_t lds) noexcept {
  EMHA_ASSERT(rows == 0 || (s && lds >= cols));
  if (valid >= cols) return;
  for (std::size_t i = 0; i < rows; ++i) fill_neg_inf(s + i * lds + valid, cols - valid);
}

void mask_key_ignore_f32(std::size_t rows, std::size_t cols, const bool* ignore, float* s,
                         std::size_t lds) noexcept {
  EMHA_ASSERT(rows == 0 || (s && ignore && lds >= cols));
  for (std::size_t i = 0; i < rows; ++i) {
    float* sr = s + i * lds;
    for (std::size_t j = 0; j < cols; ++j) sr[j] = ignore[j] ? mask_neg_inf : sr[j];
  }
}

void mask_bool_f32(std::size_t rows, std::size_t cols, const bool* masked, std::size_t ldm,
                   float* s, std::size_t lds) noexcept {
  EMHA_ASSERT(rows == 0 || (s && masked && lds >= cols));
  for (std::size_t i = 0; i < rows; ++i) {
    const bool* mr = masked + i * ldm;
    float* sr = s + i * lds;
    for (std::size_t j = 0; j < cols; ++j) sr[j] = mr[j] ? mask_neg_inf : sr[j];
  }
}

void mask_bool_to_additive_f32(std::size_t rows, std::size_t cols, const bool* masked,
                               std::size_t ldm, float* out, std::size_t ldo) noexcept {
  EMHA_ASSERT(rows == 0 || (out && masked && ldo >= cols));
  for (std::size_t i = 0; i < rows; ++i) {
    const bool* mr = masked + i * ldm;
    float* orow = out + i * ldo;
    for (std::size_t j = 0; j < cols; ++j) orow[j] = mr[j] ? mask_neg_inf : 0.0f;
  }
}

void mask_add_f32(std::size_t rows, std::size_t cols, const float* add, std::size_t ldm, float* s,
                  std::size_t lds) noexcept {
  EMHA_ASSERT(rows == 0 || (s && add && lds >= cols));
  using simd::lanes;
  for (std::size_t i = 0; i < rows; ++i) {
    const float* ar = add + i * ldm;
    float* sr = s + i * lds;
    std::size_t j = 0;
    for (; j + lanes <= cols; j += lanes) simd::store(sr + j, simd::load(sr + j) + simd::load(ar + j));
    for (; j < cols; ++j) sr[j] += ar[j];
  }
}

void mask_alibi_f32(std::size_t rows, std::size_t cols, std::ptrdiff_t diagonal, float slope,
                    float* s, std::size_t lds) noexcept {
  EMHA_ASSERT(rows == 0 || (s && lds >= cols));
  using simd::lanes;
  float iota[lanes];  // 0, 1, ..., lanes - 1: key offsets within a vector
  for (std::size_t l = 0; l < lanes; ++l) iota[l] = float(l);
  const simd::vf32 step = simd::load(iota), neg_slope = simd::splat(-slope);
  for (std::size_t i = 0; i < rows; ++i) {
    float* sr = s + i * lds;
    const std::ptrdiff_t q = std::ptrdiff_t(i) + diagonal;  // query position minus key 0's
    std::size_t j = 0;
    // |q - j| as floats: every value involved is an integer below 2^24, so exact.
    for (; j + lanes <= cols; j += lanes) {
      const simd::vf32 d = simd::splat(float(q - std::ptrdiff_t(j))) - step;
      simd::store(sr + j, simd::load(sr + j) + neg_slope * simd::vabs(d));
    }
    for (; j < cols; ++j) {
      const std::ptrdiff_t d = q - std::ptrdiff_t(j);
      sr[j] += -slope * float(d < 0 ? -d : d);
    }
  }
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

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

}  // namespace EMHA_ISA
}  // namespace emha::detail

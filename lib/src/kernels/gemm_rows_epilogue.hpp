// SPDX-License-Identifier: Apache-2.0
#pragma once
// The epilogue of the few-row products that read B in place (gemm_f32_rows.cpp,
// gemm_w8a32_rows.cpp): c = alpha * x (+ bias) (+ beta * c), per output or on `lanes` outputs in
// lanes with the same operations in the same order.

#include "emha/kernels/gemm.hpp"
#include "isa_kernels.hpp"
#include "simd_arch.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

// c = alpha * x (+ bias) (+ beta * c): the epilogue of one output.
inline float epilogue(float x, std::size_t j, float c, const GemmOptions& o) noexcept {
  float y = o.alpha * x;
  if (o.bias) y += o.bias[j];
  if (o.beta != 0.0f) y += o.beta * c;
  return y;
}

// epilogue() on the `lanes` outputs c[j .. j + lanes): the same operations in the same order,
// in lanes (a scalar epilogue per output after a vector store cost a quarter of the scores).
inline void store_epilogue(simd::vf32 x, std::size_t j, float* c, const GemmOptions& o) noexcept {
  simd::vf32 y = simd::splat(o.alpha) * x;
  if (o.bias) y = y + simd::load(o.bias + j);
  if (o.beta != 0.0f) y = y + simd::splat(o.beta) * simd::load(c + j);
  simd::store(c + j, y);
}

// o for the columns from j on: its bias shifted with them.
inline GemmOptions offset(GemmOptions o, std::size_t j) noexcept {
  if (o.bias) o.bias += j;
  return o;
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

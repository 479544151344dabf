// SPDX-License-Identifier: Apache-2.0
#pragma once
// Columns [j0, j1) of gemm_f32_prepacked(m, n, k, ...) and gemm_w8a32_prepacked: what one task
// of a product split over threads computes (lib/src/attention/parallel.hpp). j0 is a multiple of gemm_max_nr, so the
// columns fall into the same micro-kernel panels as in the whole call: the same bits. (With B
// in place, a column block is a gemm_f32 of its own rows of W, and needs nothing new.)
// With scratch, gemm_w8a32's pre-packed columns take one panel of dequantized floats from it
// for a block of more than gemm_mr rows (gemm_w8a32_prepacked_scratch_bytes), where the build
// dequantizes panels; without room the tiles dequantize as they load, with the same bits.

#include <cstddef>
#include <cstdint>

#include "emha/kernels/gemm.hpp"
#include "emha/kernels/gemm_w8a32.hpp"
#include "isa.hpp"
#include "kernels/gemm_target.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

Status gemm_f32_prepacked_columns(std::size_t m, std::size_t n, std::size_t j0, std::size_t j1,
                                  std::size_t k, const float* a, std::size_t lda,
                                  const float* packed_b, std::size_t packed_floats, float* c,
                                  std::size_t ldc, const GemmOptions& o) noexcept;

Status gemm_w8a32_prepacked_columns(std::size_t m, std::size_t n, std::size_t j0, std::size_t j1,
                                    std::size_t k, const float* a, std::size_t lda,
                                    const std::int8_t* packed, std::size_t packed_bytes, float* c,
                                    std::size_t ldc, const GemmOptions& o) noexcept;
Status gemm_w8a32_prepacked_columns(std::size_t m, std::size_t n, std::size_t j0, std::size_t j1,
                                    std::size_t k, const float* a, std::size_t lda,
                                    const std::int8_t* packed, std::size_t packed_bytes, float* c,
                                    std::size_t ldc, const GemmOptions& o, ArenaRef& scratch) noexcept;

// Whether pre-packed int8 panels are dequantized into scratch for a block of rows: not where
// stack is the budget (Cortex-M). There a second caller of the float tiles took them out of
// line, and a 13th argument grew the layer's product frame: Cortex-M4 -Os's forward past 1 KiB.
inline constexpr bool gemm_w8_dequantizes_panels = !gemm_target.tile_out_of_line;

// Columns [j0, j1) of a layer's product over pre-packed int8 weights, with the task's arena
// where the build dequantizes panels.
[[gnu::always_inline]] inline Status gemm_w8a32_prepacked_task(
    std::size_t m, std::size_t n, std::size_t j0, std::size_t j1, std::size_t k, const float* a,
    std::size_t lda, const std::int8_t* packed, std::size_t packed_bytes, float* c, std::size_t ldc,
    const GemmOptions& o, ArenaRef& arena) noexcept {
  if constexpr (gemm_w8_dequantizes_panels)
    return gemm_w8a32_prepacked_columns(m, n, j0, j1, k, a, lda, packed, packed_bytes, c, ldc, o, arena);
  else
    return gemm_w8a32_prepacked_columns(m, n, j0, j1, k, a, lda, packed, packed_bytes, c, ldc, o);
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

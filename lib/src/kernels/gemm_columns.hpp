// SPDX-License-Identifier: Apache-2.0
#pragma once
// Columns [j0, j1) of gemm_f32_prepacked(m, n, k, ...) and gemm_w8a32_prepacked: what one task
// of a product split over threads computes (lib/src/attention/parallel.hpp). j0 is a multiple of gemm_max_nr, so the
// columns fall into the same micro-kernel panels as in the whole call: the same bits. (With B
// in place, a column block is a gemm_f32 of its own rows of W, and needs nothing new.)

#include <cstddef>
#include <cstdint>

#include "emha/kernels/gemm.hpp"
#include "emha/kernels/gemm_w8a32.hpp"
#include "isa.hpp"

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

}  // namespace EMHA_ISA
}  // namespace emha::detail

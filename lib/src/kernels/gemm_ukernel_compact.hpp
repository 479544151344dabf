// SPDX-License-Identifier: Apache-2.0
#pragma once
// The GEMM tile of a build that asks for size (simd::optimize_size: -Os), in place of
// gemm_ukernel_rows' kernel per row count (each with its own copy of gemm_store_tile): one
// MR x NR tile for every row count, and one store loop for every tile but a whole plain one.
// A tile of m < MR rows reads row m - 1 again for the rows past it: their sums are computed and
// dropped (a full tile's FMAs). Each output is gemm_ukernel_f32's FMA chain in the same order,
// stored through the epilogue of its whole tiles (beta's term fused).

#include <cstddef>

#include "kernels/gemm_ukernel.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

// c[m x n] = alpha * a[m x kc] bp[kc x n] (+ bias) (+ beta * c), 1 <= m <= gemm_mr, n <= gemm_nr,
// kc >= 1: a rows lda apart, bp a packed panel [kc][gemm_nr], c rows ldc apart. Out of line: one
// frame on the stack chain.
// TB: the panel's element type (float, or int8 dequantized as loaded: gemm_ukernel_f32's).
template <class TB = float>
[[gnu::noinline]] void gemm_ukernel_compact(std::size_t kc, const float* a, std::size_t lda,
                                            const TB* bp, float* c, std::size_t ldc,
                                            std::size_t m, std::size_t n,
                                            const GemmEpilogue& e) noexcept {
  using simd::vf32;
  constexpr std::size_t MR = gemm_mr, NV = gemm_nv, L = simd::lanes, NR = gemm_nr;
  const float* ar[MR];
  for (std::size_t r = 0; r < MR; ++r) ar[r] = a + (r < m ? r : m - 1) * lda;
  vf32 acc[MR][NV];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (std::size_t v = 0; v < NV; ++v) acc[r][v] = simd::splat(0.0f);
  const TB* const b_end = bp + kc * NR;
  do {  // kc >= 1: one compare and one branch per k step
    vf32 bv[NV];
#pragma GCC unroll 4
    for (std::size_t v = 0; v < NV; ++v) bv[v] = gemm_load_b(bp + v * L, e.scale, v * L);
#pragma GCC unroll 8
    for (std::size_t r = 0; r < MR; ++r) {
      const auto av = simd::splat_operand(*ar[r]++);
#pragma GCC unroll 4
      for (std::size_t v = 0; v < NV; ++v) acc[r][v] = simd::fmadd(av, bv[v], acc[r][v]);
    }
    bp += NR;
  } while (bp != b_end);
  if (e.plain && m == MR && n == NR) {
#pragma GCC unroll 8
    for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
      for (std::size_t v = 0; v < NV; ++v) simd::store(c + r * ldc + v * L, acc[r][v]);
    return;
  }
  float tile[MR * NR];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (std::size_t v = 0; v < NV; ++v) simd::store(tile + r * NR + v * L, acc[r][v]);
  for (std::size_t r = 0; r < m; ++r) {
    for (std::size_t j = 0; j < n; ++j)
      c[r * ldc + j] = gemm_epilogue_at<true>(e, tile[r * NR + j], j, c + r * ldc + j);
  }
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

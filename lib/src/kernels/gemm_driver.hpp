// SPDX-License-Identifier: Apache-2.0
#pragma once
// Pieces of the blocked GEMM drivers (gemm_f32.cpp, gemm_w8a32.cpp): how a panel's rows split
// into micro-kernel tiles, and the k == 0 product.

#include <cstddef>

#include "emha/kernels/gemm.hpp"
#include "isa.hpp"
#include "kernels/gemm_ukernel.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

// k == 0: C = bias + beta * C.
inline void gemm_no_k(std::size_t m, std::size_t n, float* c, std::size_t ldc,
                      const GemmOptions& o) noexcept {
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      float x = o.bias ? o.bias[j] : 0.0f;
      if (o.beta != 0.0f) x += o.beta * c[i * ldc + j];
      c[i * ldc + j] = x;
    }
}

// Rows of a panel left after its whole MR-row tiles: 0, the last MR + r (0 < r < MR), or all
// of mc < MR.
template <std::size_t MR>
constexpr std::size_t row_tail(std::size_t mc) noexcept {
  const std::size_t r = mc % MR;
  return r == 0 ? 0 : (mc > MR ? MR + r : r);
}

// tile(i, rows) over rows [first, mc) of a panel in MR-row tiles, a tail of MR + r rows as two
// tiles of about half: a tile of few rows has too few accumulators to hide the FMA latency
// (6 + 2 rows costs more than 4 + 4). first: 0, or MR after a packing tile.
template <std::size_t MR, class Tile>
[[gnu::always_inline]] inline void row_tiles(std::size_t first, std::size_t mc, Tile&& tile) noexcept {
  const std::size_t tail = row_tail<MR>(mc);
  std::size_t i = first;
  for (; i < mc - tail; i += MR) tile(i, MR);
  if (tail > MR) {
    tile(i, tail / 2);
    tile(i + tail / 2, tail - tail / 2);
  } else if (tail) {
    tile(i, tail);
  }
}

// The mc rows of one panel ([kc][NR] of TB: float, or int8 widened as loaded) summed in k
// blocks (GemmOptions::k_blocks), out of line: decided once per panel, so the drivers' one-chain
// tile loop keeps its code (a branch per tile cost the aarch64 GEMM 2% of its instructions at
// 64^3, bench/icount/gemm_icount.sh). One definition for both drivers.
template <class TB>
[[gnu::noinline, gnu::flatten]] void panel_blocked(std::size_t kc, const float* a, std::size_t lda, const TB* panel,
                                                   float* c, std::size_t ldc, std::size_t mc, std::size_t nr,
                                                   const GemmEpilogue& e) noexcept {
  for (std::size_t ir = 0; ir < mc; ir += gemm_mr)
    gemm_ukernel_blocked(simd::arch{}, kc, a + ir * lda, lda, panel, c + ir * ldc, ldc, gemm_min(gemm_mr, mc - ir), nr,
                         e);
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

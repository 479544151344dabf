// SPDX-License-Identifier: Apache-2.0
#pragma once
// One row of C over P consecutive packed panels of B (m == 1: a decode step's projections, a GEMV).
// The MR x NR micro-kernel given one row holds NV accumulators, each a chain of dependent FMAs:
// latency-bound at NV FMAs per FMA latency (AVX2: 16 floats of B per 4 cycles, ~60 GB/s at
// 3.7 GHz, under what L3 delivers). Here P panels side by side give P x NV independent chains.
// Each output is the same chain, in the same order, as gemm_ukernel_f32's (with Blocked, the
// same k blocks folded the same way), so the result is bit for bit the tile path's.

#include <cstddef>

#include "kernels/gemm_ukernel.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

// c[0 .. P * NR) = a[0 .. kc) * the P panels ([kc][NR] each, `stride` elements apart), through e
// (its bias and an int8 panel's scales are the first panel's, P * NR of them readable; alpha,
// beta as the tile's). TB: the panels' element type, float or int8 (dequantized as loaded,
// gemm_ukernel_f32's).
template <bool Blocked, std::size_t P = gemm_target.gemv_panels, std::size_t NV = gemm_nv, class TB = float>
[[gnu::noinline]] void gemm_gemv_f32(std::size_t kc, const float* a, const TB* b, std::size_t stride,
                                     float* c, const GemmEpilogue& e) noexcept {
  using simd::vf32;
  constexpr std::size_t L = simd::lanes, NR = NV * L;
  vf32 acc[P][1][NV];  // [panel][the one row][vector]: a tile's accumulators per panel
  for (std::size_t q = 0; q < P; ++q)
    for (std::size_t v = 0; v < NV; ++v) acc[q][0][v] = simd::splat(0.0f);
  auto steps = [&](std::size_t p, std::size_t end) __attribute__((always_inline)) {
    for (; p < end; ++p) {
      const auto av = simd::splat_operand(a[p]);
#pragma GCC unroll 8
      for (std::size_t q = 0; q < P; ++q)
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v)
          acc[q][0][v] = simd::fmadd(av, gemm_load_b(b + q * stride + p * NR + v * L, e.scale, q * NR + v * L), acc[q][0][v]);
    }
  };
  if constexpr (Blocked) {  // gemm_ukernel_f32's blocks: total = block 0, then + each later one
    if (kc > gemm_k_block) {
      vf32 total[P][NV];
      auto fold = [&](bool first) __attribute__((always_inline)) {
        for (std::size_t q = 0; q < P; ++q)
          for (std::size_t v = 0; v < NV; ++v) {
            total[q][v] = first ? acc[q][0][v] : total[q][v] + acc[q][0][v];
            acc[q][0][v] = simd::splat(0.0f);
          }
      };
      steps(0, gemm_k_block);
      fold(true);
      std::size_t p = gemm_k_block;
      for (; kc - p > gemm_k_block; p += gemm_k_block) {
        steps(p, p + gemm_k_block);
        fold(false);
      }
      steps(p, kc);
      for (std::size_t q = 0; q < P; ++q)
        for (std::size_t v = 0; v < NV; ++v) acc[q][0][v] = total[q][v] + acc[q][0][v];
    } else {
      steps(0, kc);
    }
  } else {
    steps(0, kc);
  }
  for (std::size_t q = 0; q < P; ++q) {
    const GemmEpilogue eq{e.alpha, e.beta, e.bias ? e.bias + q * NR : nullptr};
    gemm_store_tile(acc[q], c + q * NR, NR, 1, NR, eq);
  }
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

// SPDX-License-Identifier: Apache-2.0
#pragma once
// The GEMM's per-target choices, one record per architecture: everything the driver
// (gemm_f32.cpp) and the micro-kernels (gemm_ukernel.hpp) decide by target is read from here.
//
// Register plans (accumulators + B vectors + A broadcast):
//   AVX2     6 x 16 (NV=2): 12 + 2 + 1 = 15 of 16 ymm
//   AVX-512  6 x 32 (NV=2): 12 + 2 + 1 of 32 zmm (room left; 6 rows keep A broadcasts cheap)
//   armv7    4 x 8  (NV=2):  8 + 2 + 1 of 16 q (6 x 8 would leave no slack for the compiler);
//            SSE2 the same over its 16 xmm
//   aarch64  4 x 16 (NV=4): a hand-tuned tile (gemm_ukernel_neon64.hpp)
//   MVE      3 x 8  (NV=2):  6 + 2 of 8 q; A's element is VFMA's scalar operand, in a core
//            register (simd::splat_operand); 4 x 8 would need 10 q
//   scalar   4 x 4  (NV=4): 16 + 4 + 1 of 32 s registers on a Cortex-M4F/M7

#include <cstddef>

#include "emha/kernels/gemm.hpp"
#include "simd_arch.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

struct GemmTarget {
  std::size_t mr;         // rows of the micro-kernel's tile
  std::size_t nv;         // vectors per row: the tile is mr x (nv * lanes) floats
  unsigned k_unroll;      // k steps per iteration of the tile's loop
  // Narrow tile: a panel of at most one vector of valid columns (a 16-wide head on AVX-512, an n
  // tail) runs narrow_mr rows x one vector, reading only that half of each packed row; 8 rows
  // keep 8 FMAs in flight where 6 x 1 would not. Where the tile has two vectors per row.
  bool narrow;
  std::size_t narrow_mr;
  // A small op(B) = B is read in place by a narrow tile when its k block spans at most this many
  // floats (16 KB, half an L1D: contiguous, so its lines map to distinct sets whatever ldb).
  std::size_t in_place_max_floats;
  // With a single row block, the first tile of a whole panel of B packs it as it runs (the copy
  // issues beside the FMAs). Not on the scalar path (no data cache there: the copy costs the same
  // wherever it runs, and a second kernel costs flash), nor beside the hand-tuned aarch64 tile.
  bool packs_in_tile;
  // A decode step's one row (m == 1) over prepacked weights runs gemm_gemv.hpp over this many
  // panels side by side (independent FMA chains); 0: the tiles.
  std::size_t gemv_panels;
  // Each tile one out-of-line call (gemm_ukernel.hpp), k-blocked tiles one row at a time: where
  // stack is the budget (Cortex-M: tests/firmware/stack_budget.py).
  bool tile_out_of_line;
};

inline constexpr GemmTarget gemm_target_scalar{4, 4, 1, false, 0, 0, false, 0, true};  // Cortex-M, armv6
inline constexpr GemmTarget gemm_target_neon64{4, 4, 4, false, 0, 0, false, 4, false};  // aarch64
inline constexpr GemmTarget gemm_target_4_lanes{4, 2, 4, true, 8, 4096, true, 4, false};  // armv7, SSE2
// Helium (Cortex-M55): no narrow tile (8 x 1 would need 9 q), no packing tile and no side-by-side
// panels for a decode row (for the scalar path's reasons: no cache to save a trip to, flash).
inline constexpr GemmTarget gemm_target_mve{3, 2, 4, false, 0, 0, false, 0, true};
inline constexpr GemmTarget gemm_target_wide{6, 2, 4, true, 8, 4096, true, 4, false};  // AVX2, AVX-512

constexpr GemmTarget gemm_target_of_build() noexcept {
  if (!simd::enabled) return gemm_target_scalar;
  if (simd::is_neon64) return gemm_target_neon64;
  if (simd::is_mve) return gemm_target_mve;
  if (simd::lanes == 4) return gemm_target_4_lanes;
  return gemm_target_wide;
}
inline constexpr GemmTarget gemm_target = gemm_target_of_build();

inline constexpr std::size_t gemm_mr = gemm_target.mr;
inline constexpr std::size_t gemm_nv = gemm_target.nv;
inline constexpr std::size_t gemm_nr = gemm_nv * simd::lanes;
// Rows of an int8 panel's out-of-line tile: its NV column-scale vectors need registers beside
// the accumulators; Helium's 8 q hold 3 x 2 + 2 for float, so int8 tiles take 2 rows there.
inline constexpr std::size_t gemm_w8_mr = simd::is_mve ? gemm_mr - 1 : gemm_mr;
inline constexpr std::size_t gemm_narrow_nr = simd::lanes;  // a narrow panel: one vector

static_assert(gemm_mr <= gemm_max_mr && gemm_nr <= gemm_max_nr && gemm_max_nr % gemm_nr == 0,
              "the micro-kernel tile must fit the scratch bounds in gemm.hpp, whose block widths are "
              "multiples of gemm_max_nr");
static_assert(gemm_target.tile_out_of_line == simd::lean_stack,
              "a target whose stack is the budget calls its tiles out of line");
static_assert(!gemm_target.narrow || (gemm_nv == 2 && gemm_target.narrow_mr <= gemm_max_mr),
              "a narrow tile is half of a two-vector tile");

}  // namespace EMHA_ISA
}  // namespace emha::detail

// SPDX-License-Identifier: Apache-2.0
#pragma once
// The GEMM micro-kernel: an MR x NR tile of C (NR = NV vectors) held in registers while k runs
// over packed panels. One body for every instruction set (vf32 is one lane on the scalar path);
// the tile's shape per target is gemm_target.hpp's.

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "emha/kernels/gemm.hpp"
#include "kernels/gemm_target.hpp"
#include "simd_arch.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

inline constexpr unsigned gemm_k_unroll = gemm_target.k_unroll;

// How the tile's result lands in C: c = alpha * acc (+ bias) (+ beta * c). `scale` belongs to
// the panel, not to the epilogue: an int8 panel's column scales (W8A32), which the tiles multiply
// into each widened vector of B before its FMAs (gemm_load_b); float panels ignore it.
struct GemmEpilogue {
  GemmEpilogue(float alpha_, float beta_, const float* bias_, const float* scale_ = nullptr) noexcept
      : alpha(alpha_), beta(beta_), bias(bias_), scale(scale_),
        plain(alpha_ == 1.0f && beta_ == 0.0f && !bias_) {}
  float alpha;
  float beta;          // 0: C not read
  const float* bias;   // already offset to the tile's first column, or null
  const float* scale;  // an int8 panel's column scales, offset as bias, NR readable (zero padded)
  bool plain;          // c = acc: decided once per panel, not per tile
};

// One output's epilogue, for the partial tiles' scalar loops: alpha * x + ... with the full
// tiles' vector operations in the same order (beta's term fused where `fused_beta`).
template <bool fused_beta = false>
inline float gemm_epilogue_at(const GemmEpilogue& e, float x, std::size_t j, const float* cp) noexcept {
  x = e.alpha * x;
  if (e.bias) x += e.bias[j];
  if (e.beta != 0.0f) x = fused_beta ? simd::fmadd(e.beta, *cp, x) : x + e.beta * *cp;
  return x;
}

// c[m x n] = alpha * acc (+ bias) (+ beta * c) for the tile's accumulators acc[MR][NV]: whole
// vectors for a full tile, a local buffer and a scalar loop for a partial one.
template <std::size_t MR, std::size_t NV>
inline void gemm_store_tile(simd::vf32 (&acc)[MR][NV], float* c, std::size_t ldc, std::size_t m,
                            std::size_t n, const GemmEpilogue& e) noexcept {
  using simd::vf32;
  constexpr std::size_t L = simd::lanes;
  constexpr std::size_t NR = NV * L;
  const vf32 alpha = simd::splat(e.alpha);
  if (m == MR && n == NR) {
    if (e.plain) {  // the common case: plain stores
#pragma GCC unroll 8
      for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) simd::store(c + r * ldc + v * L, acc[r][v]);
      return;
    }
    const vf32 beta = simd::splat(e.beta);
#pragma GCC unroll 8
    for (std::size_t r = 0; r < MR; ++r) {
#pragma GCC unroll 4
      for (std::size_t v = 0; v < NV; ++v) {
        float* cp = c + r * ldc + v * L;
        vf32 x = acc[r][v] * alpha;
        if (e.bias) x = x + simd::load(e.bias + v * L);
        if (e.beta != 0.0f) x = simd::fmadd(beta, simd::load(cp), x);
        simd::store(cp, x);
      }
    }
    return;
  }
  if constexpr (L == 1) {  // scalar: the accumulators are the tile's floats, no buffer needed
    for (std::size_t r = 0; r < m && r < MR; ++r) {
      for (std::size_t j = 0; j < n && j < NV; ++j)
        c[r * ldc + j] = gemm_epilogue_at(e, acc[r][j].v, j, c + r * ldc + j);
    }
    return;
  }
  float tile[MR * NR];
  for (std::size_t r = 0; r < MR; ++r)
    for (std::size_t v = 0; v < NV; ++v) simd::store(tile + r * NR + v * L, acc[r][v]);
  for (std::size_t r = 0; r < m; ++r) {
    for (std::size_t j = 0; j < n; ++j)
      c[r * ldc + j] = gemm_epilogue_at(e, tile[r * NR + j], j, c + r * ldc + j);
  }
}

// The vector of a panel of op(B) at p, its first column `col` of the panel, as floats: a float
// panel's own; an int8 panel's values widened (exact) times their columns' scales
// (scale[col ..], rounded once): float(q) * scale[j], the dequantized weight (W8A32).
inline simd::vf32 gemm_load_b(const float* p, const float* /*scale*/, std::size_t /*col*/) noexcept {
  return simd::load(p);
}
inline simd::vf32 gemm_load_b(const std::int8_t* p, const float* scale, std::size_t col) noexcept {
  return simd::load_s8(p) * simd::load(scale + col);
}

// Where a tile reads its panel of op(B), [kc][NV vectors], and what else it does with it.
enum class BRead {
  packed,    // b: [kc][gemm_nr] packed
  in_place,  // b: rows ldb apart: op(B) = B's own (small enough to stay in L1 unpacked), or a
             // packed panel read by a narrow tile (NV < gemm_nv: its first NV vectors, ldb = gemm_nr)
  packing,   // as in_place, and each row is also stored to bp [kc][NR] for the panel's later tiles
};

// One MR x NR tile of C (exactly MR rows; n <= NR valid columns, a partial tile is stored
// through a local buffer). a: the tile's first row of A, rows lda apart (read in place: at these
// sizes A stays in cache and packing it costs more than it saves). b: the panel, as R says (ldb:
// its row stride unless packed; bp: the packing copy's destination). c: the tile's top-left. Not
// forced inline: where GCC inlines it into the driver, the x86-64 build spills one pointer per 4 k
// steps; forced into every call site it spilled the row pointers.
//
// Packing: the panel is packed by the first tile that uses it. The copy's loads and stores issue
// beside the FMAs, where a packing loop before the tiles runs alone.
//
// Blocked (GemmOptions::k_blocks): k in blocks of gemm_k_block, each one FMA chain from zero in
// the registers, added in order to a running total in L1. A separate instantiation: the one-chain
// kernel's code stays what it was (a branch in its loop cost 3-7% at 64^3, bench/ab/ab.sh).
//
// TB: the panel's element type: float, or int8 (W8A32's packed weights), each vector dequantized
// as it is loaded (gemm_load_b: e.scale), so each output is the same FMA chain as from a float
// panel of the dequantized weights.
template <std::size_t MR = gemm_mr, std::size_t NV = gemm_nv, BRead R = BRead::packed,
          bool Blocked = false, class TB = float>
inline void gemm_ukernel_f32(std::size_t kc, const float* a, std::size_t lda, const TB* b,
                             std::size_t ldb, float* bp, float* c, std::size_t ldc, std::size_t n,
                             const GemmEpilogue& e) noexcept {
  using simd::vf32;
  constexpr std::size_t L = simd::lanes;
  constexpr std::size_t NR = NV * L;
  constexpr bool Pack = R == BRead::packing;
  static_assert(!Pack || NV == gemm_nv, "a packing tile writes whole panels");
  static_assert(!Pack || std::is_same<TB, float>::value, "a packing tile copies float panels");
  const std::size_t b_step = R == BRead::packed ? gemm_nr : ldb;

  const float* ar[MR];
  for (std::size_t r = 0; r < MR; ++r) ar[r] = a + r * lda;

  vf32 acc[MR][NV];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (std::size_t v = 0; v < NV; ++v) acc[r][v] = simd::splat(0.0f);

  // Unrolled gemm_k_unroll k steps deep: the loop's index and pointer updates and its branch are
  // paid once per gemm_k_unroll x MR x NV FMAs. That matters when the core's issue slots are
  // shared (an SMT sibling): there this loop is bound by instructions issued, not by FMA units.
  auto step = [&](std::size_t p) __attribute__((always_inline)) {
    vf32 bv[NV];
#pragma GCC unroll 4
    for (std::size_t v = 0; v < NV; ++v) {
      bv[v] = gemm_load_b(b + v * L, e.scale, v * L);
      if constexpr (Pack) simd::store(bp + v * L, bv[v]);
    }
#pragma GCC unroll 8
    for (std::size_t r = 0; r < MR; ++r) {
      const auto av = simd::splat_operand(ar[r][p]);
#pragma GCC unroll 4
      for (std::size_t v = 0; v < NV; ++v) acc[r][v] = simd::fmadd(av, bv[v], acc[r][v]);
    }
    b += b_step;
    if constexpr (Pack) bp += NR;
  };
  // An int8 panel where stack is the budget: one k step per iteration (unrolled, its widened
  // loads in flight spill Helium's 8 q past the 1 KiB budget).
  auto steps = [&](std::size_t p, std::size_t end) __attribute__((always_inline)) {
    if constexpr (gemm_target.tile_out_of_line && !std::is_same<TB, float>::value) {
#pragma GCC unroll 1
      for (; p < end; ++p) step(p);
    } else {
#pragma GCC unroll gemm_k_unroll
      for (; p < end; ++p) step(p);
    }
  };
  if constexpr (Blocked) {
    if (kc > gemm_k_block) {
      float total[MR * NR];  // the blocks before the last, summed in order
      // fold(first): total = acc (first) or total + acc, and acc = 0 for the next block
      auto fold = [&](bool first) __attribute__((always_inline)) {
#pragma GCC unroll 8
        for (std::size_t r = 0; r < MR; ++r) {
#pragma GCC unroll 4
          for (std::size_t v = 0; v < NV; ++v) {
            float* t = total + r * NR + v * L;
            simd::store(t, first ? acc[r][v] : simd::load(t) + acc[r][v]);
            acc[r][v] = simd::splat(0.0f);
          }
        }
      };
      steps(0, gemm_k_block);
      fold(true);
      std::size_t p = gemm_k_block;
      for (; kc - p > gemm_k_block; p += gemm_k_block) {  // every block but the last: 16 steps
        steps(p, p + gemm_k_block);
        fold(false);
      }
      steps(p, kc);
#pragma GCC unroll 8
      for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) acc[r][v] = simd::load(total + r * NR + v * L) + acc[r][v];
      return gemm_store_tile(acc, c, ldc, MR, n, e);
    }
  }
  steps(0, kc);
  gemm_store_tile(acc, c, ldc, MR, n, e);
}

// The last row tile of a block (m < MR rows) runs a kernel of exactly m rows: no wasted FMAs,
// and its stores take the full-tile path. Attention shapes (S = 32, 64, ...) hit this often.
template <std::size_t MR, std::size_t NV = gemm_nv, BRead R = BRead::packed, bool Blocked = false,
          class TB = float>
inline void gemm_ukernel_rows(std::size_t kc, const float* a, std::size_t lda, const TB* b,
                              std::size_t ldb, float* c, std::size_t ldc, std::size_t m, std::size_t n,
                              const GemmEpilogue& e) noexcept {
  if constexpr (MR > 1) {
    if (m < MR) return gemm_ukernel_rows<MR - 1, NV, R, Blocked, TB>(kc, a, lda, b, ldb, c, ldc, m, n, e);
  }
  gemm_ukernel_f32<MR, NV, R, Blocked, TB>(kc, a, lda, b, ldb, nullptr, c, ldc, n, e);
}

// The tile of a target whose stack is the budget (gemm_target.tile_out_of_line: Cortex-M, armv6,
// scalar or MVE): one out-of-line call per tile, everything below it inlined. Inlined into the
// driver instead, the row counts at its 3 call sites would each add their spills and partial-tile
// buffers to gemm_f32's frame; not inlined at all (-Os), the row dispatch, the kernel and its
// store would nest three frames. Stack is what a firmware must reserve
// (tests/firmware/stack_budget.py); a call per tile costs nothing measurable.
template <class TB = float>
[[gnu::noinline, gnu::flatten]] void gemm_ukernel_out_of_line(
    std::size_t kc, const float* a, std::size_t lda, const TB* bp, float* c, std::size_t ldc,
    std::size_t m, std::size_t n, const GemmEpilogue& e) noexcept {
  constexpr std::size_t MR = std::is_same<TB, float>::value ? gemm_mr : gemm_w8_mr;
  if constexpr (MR == gemm_mr) {
    gemm_ukernel_rows<MR, gemm_nv, BRead::packed, false, TB>(kc, a, lda, bp, gemm_nr, c, ldc, m, n, e);
  } else {
    for (std::size_t i = 0; i < m; i += MR)
      gemm_ukernel_rows<MR, gemm_nv, BRead::packed, false, TB>(kc, a + i * lda, lda, bp, gemm_nr, c + i * ldc,
                                                               ldc, gemm_min(MR, m - i), n, e);
  }
}

// The portable tile over a packed panel of floats or int8 (gemm_w8a32), in or out of line as
// gemm_ukernel below (no hand-tuned overload: the W8A32 paths run this one for both element
// types, so the two give the same bits).
template <class TB>
[[gnu::always_inline]] inline void gemm_ukernel_portable(std::size_t kc, const float* a, std::size_t lda,
                                                         const TB* bp, float* c, std::size_t ldc,
                                                         std::size_t m, std::size_t n,
                                                         const GemmEpilogue& e) noexcept {
  if constexpr (!gemm_target.tile_out_of_line) {
    gemm_ukernel_rows<gemm_mr, gemm_nv, BRead::packed, false, TB>(kc, a, lda, bp, gemm_nr, c, ldc, m, n, e);
  } else {
    gemm_ukernel_out_of_line<TB>(kc, a, lda, bp, c, ldc, m, n, e);
  }
}

// The micro-kernel for this build's architecture: the portable one above, unless a hand-tuned
// overload for the architecture tag is declared (gemm_ukernel_neon64.hpp).
template <class Arch>
inline void gemm_ukernel(Arch, std::size_t kc, const float* a, std::size_t lda, const float* bp,
                         float* c, std::size_t ldc, std::size_t m, std::size_t n,
                         const GemmEpilogue& e) noexcept {
  if constexpr (!gemm_target.tile_out_of_line) {
    gemm_ukernel_rows<gemm_mr>(kc, a, lda, bp, gemm_nr, c, ldc, m, n, e);
  } else {
    gemm_ukernel_out_of_line(kc, a, lda, bp, c, ldc, m, n, e);
  }
}

// A tile summed in k blocks (GemmOptions::k_blocks); gemm_panel_blocked runs it. Where the tile
// is out of line (the stack budget), one row at a time: with more rows its running total and
// spills take Cortex-M forward over the 1 KiB stack budget. Slower for the output projection
// only (a B load per NV FMAs, not per MR x NV).
template <class Arch, class TB = float>
[[gnu::always_inline]] inline void gemm_ukernel_blocked(Arch, std::size_t kc, const float* a,
                                                        std::size_t lda, const TB* bp, float* c,
                                                        std::size_t ldc, std::size_t m, std::size_t n,
                                                        const GemmEpilogue& e) noexcept {
  if constexpr (!gemm_target.tile_out_of_line) {
    gemm_ukernel_rows<gemm_mr, gemm_nv, BRead::packed, true, TB>(kc, a, lda, bp, gemm_nr, c, ldc, m, n, e);
  } else {
    for (std::size_t r = 0; r < m; ++r)
      gemm_ukernel_f32<1, gemm_nv, BRead::packed, true, TB>(kc, a + r * lda, lda, bp, gemm_nr, nullptr,
                                                            c + r * ldc, ldc, n, e);
  }
}

// An MR-row tile that packs its panel of op(B) = B as it goes (see gemm_ukernel_f32): b, the
// panel's unpacked rows ldb apart, n == NR columns; bp receives [kc][NR] (where
// gemm_target.packs_in_tile). Not inlined: inlined into the driver, the driver's code slowed the
// attention shapes' products (bench/README.md).
[[gnu::noinline]] inline void gemm_ukernel_packing(std::size_t kc, const float* a,
                                                   std::size_t lda, const float* b,
                                                   std::size_t ldb, float* bp, float* c,
                                                   std::size_t ldc,
                                                   const GemmEpilogue& e) noexcept {
  gemm_ukernel_f32<gemm_mr, gemm_nv, BRead::packing>(kc, a, lda, b, ldb, bp, c, ldc, gemm_nr, e);
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

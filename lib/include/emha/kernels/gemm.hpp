// SPDX-License-Identifier: Apache-2.0
#pragma once
// f32 GEMM: C[M x N] = alpha * A[M x K] * op(B) (+ bias[j]) (+ beta * C), row-major.
// op(B) = B [K x N] (Trans::none) or B^T with B stored [N x K] (Trans::transpose: x*W^T with
// PyTorch-layout weights, Q*K^T). Leading dimensions are in elements.
//
// Register-blocked: op(B) is packed into NR-column panels in caller scratch (or pre-packed once)
// and an MR x NR micro-kernel of FMAs runs over them and A (lib/src/kernels/gemm_ukernel.hpp).

#include <cstddef>

#include "emha/arena.hpp"
#include "emha/status.hpp"

namespace emha {

enum class Trans : unsigned char { none, transpose };

struct GemmOptions {
  float alpha = 1.0f;
  float beta = 0.0f;             // beta == 0: C is write-only (never read, NaN in C is harmless)
  const float* bias = nullptr;   // [N], added to every row; null = no bias
  // false: each output's k products summed in one FMA chain. true: in blocks of gemm_k_block
  // consecutive k, each block a chain from zero, the blocks added in order (a running total).
  bool k_blocks = false;
};

// Cache blocking of the packed driver. Upper bounds of the micro-kernel tiles of every build,
// so that scratch sizes are compile-time constants independent of the target.
// kc = 512 takes the projections of d_model <= 512 in one k block, so C is written once and never
// read back (faster than kc = 256 at 256x1536x512 and 512^3: bench/README.md history).
inline constexpr std::size_t gemm_kc = 512;       // K per packed block
// GemmOptions::k_blocks: k in blocks of gemm_k_block. One FMA chain over all of k grows its error
// with k; blocks of 16 cut it (the partial sums stay small), at one load, add and store of the
// running total per accumulator per block (no registers: AVX2's and aarch64's tiles use them
// all). The layer's output projection sums in blocks: on x86 that took emha's max error against
// a float64 truth from up to 2.5x PyTorch float32's to at most 1.7x on the seed fixtures (1.4x on
// the nn.MultiheadAttention ones), for 0.6-2.2% of the forward (bench/README.md history).
inline constexpr std::size_t gemm_k_block = 16;
inline constexpr std::size_t gemm_mc = 96;        // rows of A per block (mc x kc floats in L2)
inline constexpr std::size_t gemm_max_mr = 8;
inline constexpr std::size_t gemm_max_nr = 32;
// A packed block of op(B) is at most kc x nc = gemm_block_floats (256 KB, half an L2): 128
// columns at kc = 512, all of N up to 1024 at K = 64.
inline constexpr std::size_t gemm_block_floats = 128 * 512;
// Up to this many floats of A (m x kc, 144 KB: under a third of a 512 KB L2) the rows run as
// one block and op(B) is packed one NR-column panel at a time, just before its tiles, into
// kc x NR scratch that stays in L1. 192 x 192 takes in the fused attention's P V_h tile.
inline constexpr std::size_t gemm_per_panel_max_a_floats = 192 * 192;

constexpr std::size_t gemm_min(std::size_t a, std::size_t b) noexcept { return a < b ? a : b; }
constexpr std::size_t gemm_round_up(std::size_t a, std::size_t b) noexcept { return (a + b - 1) / b * b; }

// Whether a k block of m x kc floats of A runs as one row block, op(B) packed panel by panel.
constexpr bool gemm_per_panel(std::size_t m, std::size_t kc) noexcept {
  return m * kc <= gemm_per_panel_max_a_floats;
}

// Columns of op(B) per packed block for k blocks of kc (> 0): a multiple of every NR.
constexpr std::size_t gemm_nc(std::size_t kc) noexcept {
  return gemm_block_floats / kc / gemm_max_nr * gemm_max_nr;
}
static_assert(gemm_nc(gemm_kc) >= gemm_max_nr, "a block must hold at least one panel");

// Scratch bytes gemm_f32 takes from its arena for these sizes (the same for both B layouts):
// one panel of kc x NR floats when gemm_per_panel(m, kc) (A's first k block), else one
// block of op(B) in panels: min(n, nc) columns (min(n, nc) * kc <= min(n * kc, block floats))
// rounded up to the build's NR <= gemm_max_nr. The bound is nondecreasing in m, n and k, so a
// buffer sized for the largest call serves every smaller one (the block's exact size is not:
// nc shrinks as kc grows).
constexpr std::size_t gemm_f32_scratch_bytes(std::size_t m, std::size_t n, std::size_t k) noexcept {
  if (m == 0 || n == 0 || k == 0) return 0;
  const std::size_t kc = gemm_min(k, gemm_kc);
  const std::size_t floats = gemm_per_panel(m, kc)
                                 ? gemm_max_nr * kc
                                 : gemm_min(n * kc, gemm_block_floats) + (gemm_max_nr - 1) * kc;
  return floats * sizeof(float) + 64;
}

// Floats of a pre-packed op(B) [k x n] (gemm_f32_pack_b), for every build's panel width.
constexpr std::size_t gemm_f32_packed_b_floats(std::size_t n, std::size_t k) noexcept {
  return k * (n + gemm_max_nr - 1);
}

// C = alpha * A * op(B) (+ bias) (+ beta * C).
//   a: [m x k], lda >= k;  b: [k x n], ldb >= n (none) or [n x k], ldb >= k (transpose);
//   c: [m x n], ldc >= n. m, n or k == 0 is allowed (k == 0 gives bias + beta * C).
// Scratch: gemm_f32_scratch_bytes(m, n, k) from `scratch`, released before returning.
// Returns no_space if the arena is too small (C untouched), null_pointer for a null operand.
Status gemm_f32(std::size_t m, std::size_t n, std::size_t k,
                const float* a, std::size_t lda,
                const float* b, std::size_t ldb, Trans trans_b,
                float* c, std::size_t ldc,
                ArenaRef& scratch, const GemmOptions& options = {}) noexcept;

// gemm_f32 for few rows of A (a decode step's attention: m = the new tokens), reading B in place:
// no packing and no scratch, so B is read once however it is strided. With op(B) = B^T each output
// is a dot product summed in the lanes; with B, one FMA chain over k. Any m is correct; past a
// few rows gemm_f32's register tiles are faster. options.k_blocks is not applied.
void gemm_f32_rows(std::size_t m, std::size_t n, std::size_t k,
                   const float* a, std::size_t lda,
                   const float* b, std::size_t ldb, Trans trans_b,
                   float* c, std::size_t ldc, const GemmOptions& options = {}) noexcept;

// Packs op(B) [k x n] once (weights at set-up) into the panels the micro-kernel streams.
// `packed` holds at least gemm_f32_packed_b_floats(n, k) floats (else size_mismatch).
Status gemm_f32_pack_b(std::size_t n, std::size_t k, const float* b, std::size_t ldb, Trans trans_b,
                       float* packed, std::size_t packed_floats) noexcept;

// gemm_f32 with op(B) already packed by gemm_f32_pack_b(n, k, ...) of this build: no scratch, no
// packing. `packed_floats` is the size of packed_b: size_mismatch (C untouched) when it holds
// fewer floats than the panels of op(B) [k x n] take (gemm_f32_packed_b_floats(n, k) always do).
Status gemm_f32_prepacked(std::size_t m, std::size_t n, std::size_t k,
                          const float* a, std::size_t lda,
                          const float* packed_b, std::size_t packed_floats,
                          float* c, std::size_t ldc, const GemmOptions& options = {}) noexcept;

}  // namespace emha

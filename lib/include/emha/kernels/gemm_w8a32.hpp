// SPDX-License-Identifier: Apache-2.0
#pragma once
// W8A32 GEMM: float activations times int8 weights with one float scale per output channel.
//   C[m x n] = alpha * acc[i][j] (+ bias[j]) (+ beta * C),
//   acc[i][j] = sum_p a[i][p] * wd[j][p],   wd[j][p] = float(w[j][p]) * scale[j] (rounded to float)
// with W [n x k] in PyTorch's nn.Linear layout (row j = output channel j, values in [-127, 127],
// symmetric, zero point 0). Each weight is dequantized as it is widened: wd is exactly
// w.float() * scale[:, None] in float32, and the sum over wd is gemm_f32's (FMAs, same order), so
// the result is F.linear(x, wd, b) (alpha = 1, beta = 0) as gemm_f32 computes it on wd: the same
// bits where gemm_f32 runs the same tiles. Row-major, leading dimensions in elements.
// GemmOptions are gemm_f32's (alpha, beta, bias, k_blocks: acc in blocks of gemm_k_block).
//
// In place, W's rows are packed NR columns at a time as dequantized floats into caller scratch and
// run through gemm_f32's micro-kernel tiles; pre-packed, the tiles read int8 panels and dequantize
// each vector as they load it (widen, times the columns' scales). Both sum each output in the same order: for the same inputs they give
// the same bits, whatever the columns a call is split into (detail::gemm_w8a32_prepacked_columns).

#include <cstddef>
#include <cstdint>

#include "emha/arena.hpp"
#include "emha/kernels/gemm.hpp"
#include "emha/status.hpp"

namespace emha {

// Scratch bytes gemm_w8a32 takes from its arena for these sizes: what gemm_f32 takes for
// C = A B^T (float panels of W^T, one panel or one block). A compile-time bound, nondecreasing
// in m, n and k.
constexpr std::size_t gemm_w8a32_scratch_bytes(std::size_t m, std::size_t n, std::size_t k) noexcept {
  return gemm_f32_scratch_bytes(m, n, k);
}

// Scratch bytes the layer's pre-packed int8 products (m rows) take from a task's arena: one
// panel of W^T dequantized to floats, read by every tile of a row block (each weight widened
// once per block rather than once per tile, in the same order: the same bits). 0 for one row.
// A bound for every build; Cortex-M builds (stack the budget) take none.
constexpr std::size_t gemm_w8a32_prepacked_scratch_bytes(std::size_t m, std::size_t n, std::size_t k) noexcept {
  return m <= 1 || n == 0 || k == 0 ? 0 : gemm_max_nr * gemm_min(k, gemm_kc) * sizeof(float) + 64;
}

// The scales' part of a packed W: n floats, zero padded to every build's panel width (a tile
// loads its panel's NR scales whole) and to 64 bytes, so the panels after them start 64-byte
// aligned when `packed` is.
constexpr std::size_t gemm_w8a32_packed_scale_bytes(std::size_t n) noexcept {
  return gemm_round_up(gemm_round_up(n, gemm_max_nr) * sizeof(float), 64);
}

// Bytes of a pre-packed W [n x k] (gemm_w8a32_pack_b), for every build's panel width:
//   [0, gemm_w8a32_packed_scale_bytes(n))  scale[0 .. n) as floats, then zeros
//   then the int8 panels: k block pc (gemm_kc deep) at pc * n_padded, its panel of columns
//   [j, j + NR) at + j * kc, each [kc][NR] (op(B)[p][j] = w[j][p], columns past n zero), with
//   n_padded = n rounded up to the build's NR <= gemm_max_nr: gemm_f32_pack_b's layout in bytes.
constexpr std::size_t gemm_w8a32_packed_b_bytes(std::size_t n, std::size_t k) noexcept {
  return gemm_w8a32_packed_scale_bytes(n) + k * (n + gemm_max_nr - 1);
}

// C = alpha * A (scale * W)^T (+ bias) (+ beta * C), W read in place (flash on a Cortex-M).
//   a: [m x k], lda >= k;  w: [n x k] int8, ldw >= k;  scale: [n];  c: [m x n], ldc >= n.
//   m, n or k == 0 is allowed (k == 0 gives bias + beta * C; a, w and scale are not read).
// Scratch: gemm_w8a32_scratch_bytes(m, n, k) from `scratch`, released before returning.
// Returns no_space if the arena is too small (C untouched), null_pointer for a null operand.
Status gemm_w8a32(std::size_t m, std::size_t n, std::size_t k,
                  const float* a, std::size_t lda,
                  const std::int8_t* w, std::size_t ldw, const float* scale,
                  float* c, std::size_t ldc,
                  ArenaRef& scratch, const GemmOptions& options = {}) noexcept;

// Packs W [n x k] and its scales once (weights at set-up) into the layout above, for this
// build's kernels. `packed` is float-aligned (64 bytes recommended) and holds at least
// gemm_w8a32_packed_b_bytes(n, k) bytes: size_mismatch if fewer, misaligned if not aligned.
Status gemm_w8a32_pack_b(std::size_t n, std::size_t k, const std::int8_t* w, std::size_t ldw,
                         const float* scale, std::int8_t* packed, std::size_t packed_bytes) noexcept;

// gemm_w8a32 with W packed by gemm_w8a32_pack_b(n, k, ...) of this build: no scratch, no packing,
// the scales read from the packed buffer. Bit for bit gemm_w8a32's result. size_mismatch (C
// untouched) when packed_bytes is less than the layout of [n x k] takes, misaligned when
// `packed` is not float-aligned.
Status gemm_w8a32_prepacked(std::size_t m, std::size_t n, std::size_t k,
                            const float* a, std::size_t lda,
                            const std::int8_t* packed, std::size_t packed_bytes,
                            float* c, std::size_t ldc, const GemmOptions& options = {}) noexcept;

// A product of few rows of A with an int8 B read in place, one float scale per row of B: a
// decode step's scores and context over an int8 KvCache (B a head's cached K or V rows [keys x
// d_k], one scale per key). Unlike gemm_w8a32, each scale is applied once per sum, not per value:
//   Trans::transpose  B [n x k], b_scale[n]:  acc[i][j] = b_scale[j] * sum_p a[i][p] * b[j][p]
//   Trans::none       B [k x n], b_scale[k]:  acc[i][j] = sum_p (a[i][p] * b_scale[p]) * b[p][j]
//   c[i][j] = alpha * acc[i][j] (+ bias[j]) (+ beta * c[i][j])
// in float (a[i][p] * b_scale[p] rounded to float), the sums in gemm_f32_rows' orders; B's
// values widened exactly. No scratch, no packing; any m is correct (meant for a few rows);
// options.k_blocks is not applied. Row-major, leading dimensions in elements; m or n == 0 writes
// nothing, k == 0 gives bias + beta * C.
void gemm_w8a32_rows(std::size_t m, std::size_t n, std::size_t k,
                     const float* a, std::size_t lda,
                     const std::int8_t* b, std::size_t ldb, const float* b_scale, Trans trans_b,
                     float* c, std::size_t ldc, const GemmOptions& options = {}) noexcept;

}  // namespace emha

#pragma once
// f32 GEMM: C[M x N] = alpha * A[M x K] * op(B) (+ bias[j]) (+ beta * C), row-major.
// op(B) = B [K x N] (Trans::none) or B^T with B stored [N x K] (Trans::transpose: x*W^T with
// PyTorch-layout weights, Q*K^T). Leading dimensions are in elements.
//
// Register-blocked: A and B are packed into MR-row / NR-column panels in caller scratch and an
// MR x NR micro-kernel of FMAs runs over them (lib/src/kernels/gemm_ukernel.hpp).

#include <cstddef>

#include "emha/arena.hpp"
#include "emha/status.hpp"

namespace emha {

enum class Trans : unsigned char { none, transpose };

struct GemmOptions {
  float alpha = 1.0f;
  float beta = 0.0f;             // beta == 0: C is write-only (never read, NaN in C is harmless)
  const float* bias = nullptr;   // [N], added to every row; null = no bias
};

// Cache blocking of the packed driver. Upper bounds of the micro-kernel tiles of every build,
// so that scratch sizes are compile-time constants independent of the target.
inline constexpr std::size_t gemm_kc = 256;       // K per packed block
inline constexpr std::size_t gemm_mc = 96;        // rows of A per packed block (L2)
inline constexpr std::size_t gemm_nc = 480;       // columns of B per block; a multiple of every NR
inline constexpr std::size_t gemm_max_mr = 8;
inline constexpr std::size_t gemm_max_nr = 32;

constexpr std::size_t gemm_min(std::size_t a, std::size_t b) noexcept { return a < b ? a : b; }
constexpr std::size_t gemm_round_up(std::size_t a, std::size_t b) noexcept { return (a + b - 1) / b * b; }

// Scratch bytes gemm_f32 takes from its arena for these sizes (the same for both B layouts).
constexpr std::size_t gemm_f32_scratch_bytes(std::size_t m, std::size_t n, std::size_t k) noexcept {
  // A panel of x rows rounds up to a multiple of the build's MR <= gemm_max_mr: < x + gemm_max_mr.
  const std::size_t kc = gemm_min(k, gemm_kc);
  const std::size_t a_panel = (gemm_min(m, gemm_mc) + gemm_max_mr - 1) * kc;
  const std::size_t b_panel = (gemm_min(n, gemm_nc) + gemm_max_nr - 1) * kc;
  return (a_panel + b_panel) * sizeof(float) + 2 * 64;  // + alignment of both panels to 64 bytes
}

// Floats of a pre-packed op(B) [k x n] (gemm_f32_pack_b), for every build's panel width.
constexpr std::size_t gemm_f32_packed_b_floats(std::size_t n, std::size_t k) noexcept {
  return k * (n + gemm_max_nr - 1);
}

// Scratch bytes of gemm_f32_prepacked: only A is packed per call.
constexpr std::size_t gemm_f32_prepacked_scratch_bytes(std::size_t m, std::size_t k) noexcept {
  return (gemm_min(m, gemm_mc) + gemm_max_mr - 1) * gemm_min(k, gemm_kc) * sizeof(float) + 64;
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

// Packs op(B) [k x n] once (weights at set-up) into the panels the micro-kernel streams.
// `packed` holds at least gemm_f32_packed_b_floats(n, k) floats (else size_mismatch).
Status gemm_f32_pack_b(std::size_t n, std::size_t k, const float* b, std::size_t ldb, Trans trans_b,
                       float* packed, std::size_t packed_floats) noexcept;

// gemm_f32 with op(B) already packed by gemm_f32_pack_b(n, k, ...): skips packing B per call.
// Scratch: gemm_f32_prepacked_scratch_bytes(m, k).
Status gemm_f32_prepacked(std::size_t m, std::size_t n, std::size_t k,
                          const float* a, std::size_t lda, const float* packed_b,
                          float* c, std::size_t ldc,
                          ArenaRef& scratch, const GemmOptions& options = {}) noexcept;

}  // namespace emha

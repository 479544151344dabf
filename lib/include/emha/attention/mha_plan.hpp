#pragma once
// The size-erased core of MultiHeadAttention: dimensions as values, so that one compiled
// forward() (lib/src/attention/mha_forward.cpp) serves every Config.

#include <cstddef>

#include "emha/arena.hpp"
#include "emha/attention/options.hpp"
#include "emha/kernels/gemm.hpp"
#include "emha/status.hpp"

namespace emha::detail {

struct MhaDims {
  std::size_t d_model, heads, kdim, vdim, max_seq_q, max_seq_kv, max_batch;
  bool bias;
  bool prepack;
  bool weights;  // the unfused path (attention weights out) is available
  std::size_t threads;  // scratch slots: tasks forward() splits a stage into, at most

  constexpr std::size_t d_k() const noexcept { return d_model / heads; }
  constexpr bool same_embed_dim() const noexcept { return kdim == d_model && vdim == d_model; }
};

constexpr std::size_t mha_max(std::size_t a, std::size_t b) noexcept { return a < b ? b : a; }

// Pre-packed projection weights (gemm_f32_pack_b panels of W^T) and their sizes, or all null.
struct MhaPacked {
  const float* w[4];      // W_q, W_k, W_v, W_out
  std::size_t floats[4];  // floats of each
};

// Floats of the four packed matrices: W_q^T [d_model x d_model], W_k^T [kdim x d_model],
// W_v^T [vdim x d_model], W_out^T [d_model x d_model].
constexpr std::size_t mha_packed_floats(const MhaDims& d) noexcept {
  return gemm_f32_packed_b_floats(d.d_model, d.d_model) + gemm_f32_packed_b_floats(d.d_model, d.kdim) +
         gemm_f32_packed_b_floats(d.d_model, d.vdim) + gemm_f32_packed_b_floats(d.d_model, d.d_model);
}

// Tiles of the fused path: query rows and keys per block (multiples of every micro-kernel tile).
inline constexpr std::size_t mha_block_q = 192;
inline constexpr std::size_t mha_block_kv = 192;

constexpr std::size_t mha_min(std::size_t a, std::size_t b) noexcept { return a < b ? a : b; }

// Scratch bytes of one task slot (a thread's share of a stage), a multiple of 64. One stage at a
// time: a projection GEMM's scratch (none with pre-packed weights; a task's column block needs at
// most what the whole product does); or the heads' buffers: fused, one score tile, the online
// softmax's row max and sum, and the tile GEMMs' scratch; unfused, one head's scores
// [S_q, S_kv] and its GEMMs' scratch. Each buffer may lose 64 bytes to alignment.
constexpr std::size_t mha_slot_bytes(const MhaDims& d) noexcept {
  const std::size_t f = sizeof(float);
  const std::size_t rows = mha_max(d.max_seq_q, d.max_seq_kv);
  const std::size_t in_max = mha_max(d.d_model, mha_max(d.kdim, d.vdim));
  const std::size_t project = d.prepack ? 0 : gemm_f32_scratch_bytes(rows, 3 * d.d_model, in_max);
  const std::size_t bq = mha_min(d.max_seq_q, mha_block_q), bk = mha_min(d.max_seq_kv, mha_block_kv);
  const std::size_t fused = (bq * bk * f + 64) + 2 * (bq * f + 64) +
                            mha_max(gemm_f32_scratch_bytes(bq, bk, d.d_k()),      // Q_t K_t^T
                                    gemm_f32_scratch_bytes(bq, d.d_k(), bk));     // P_t V_t
  const std::size_t unfused = (d.max_seq_q * d.max_seq_kv * f + 64) +
                              mha_max(gemm_f32_scratch_bytes(d.max_seq_q, d.max_seq_kv, d.d_k()),
                                      gemm_f32_scratch_bytes(d.max_seq_q, d.d_k(), d.max_seq_kv));
  return arena_round_up(mha_max(project, mha_max(fused, d.weights ? unfused : 0)), 64);
}

// Arena bytes forward() takes at most. Live throughout: projected Q|K|V rows
// [max(S_q, S_kv), 3*d_model], the concatenated heads [S_q, d_model], and `threads` task slots
// (mha_slot_bytes) in one block; each of the three may lose 64 bytes to alignment.
constexpr std::size_t mha_arena_bytes(const MhaDims& d) noexcept {
  const std::size_t f = sizeof(float);
  const std::size_t rows = mha_max(d.max_seq_q, d.max_seq_kv);
  const std::size_t live = (rows * 3 * d.d_model * f + 64) + (d.max_seq_q * d.d_model * f + 64);
  return live + (d.threads * mha_slot_bytes(d) + 64);
}

// Packs the projection weights of `w` (checked) into `packed` (mha_packed_floats(d) floats).
MhaPacked mha_pack_weights(const MhaDims& d, const MhaWeights& w, float* packed) noexcept;

// Checks that every weight span the dims need is present with exactly its element count.
Status mha_check_weights(const MhaDims& d, const MhaWeights& w) noexcept;

// The whole forward pass; see MultiHeadAttention::forward. `w` has passed mha_check_weights.
Status mha_forward(const MhaDims& d, const MhaWeights& w, const MhaPacked& packed, ArenaRef& arena,
                   const AttentionShape& shape, Span<const float> query, Span<const float> key,
                   Span<const float> value, Span<float> out, const ForwardOptions& options) noexcept;

// The same pass on the scalar reference kernels (gemm_f32_ref, softmax_f32_ref).
Status mha_forward_ref(const MhaDims& d, const MhaWeights& w, ArenaRef& arena,
                       const AttentionShape& shape, Span<const float> query, Span<const float> key,
                       Span<const float> value, Span<float> out, const ForwardOptions& options) noexcept;

}  // namespace emha::detail

// SPDX-License-Identifier: Apache-2.0
#pragma once
// A decode step's query heads of one GQA/MQA group against their shared K/V head, stacked as
// the rows of one product. With one query token (S_q == 1), query head h is the d_k
// floats at Q + h * d_k, so the heads h0 .. h0 + rows - 1 of a group are one matrix
// Q_g [rows x d_k] of row stride d_k, and their contexts one matrix ctx_g [rows x d_k] of row
// stride d_k in ctx's one row [head 0 | head 1 | ...]. The per-head fused path
// (head_attention.hpp) reads the K/V head's cached keys and values once per query head, so
// group = heads / kv_heads times a step; here
//   S_t = scale Q_g K_t^T [rows x bk], masks (per row: its own head), online softmax,
//   ctx_g (+)= P_t V_t [rows x d_k]
// over the same key tiles reads them once (rows past mha_group_rows go in chunks within a key
// tile, while K_t and V_t are still in cache).
// Bits: each row is what attend_fused computes for its head with S_q == 1, whose products run
// gemm_rows with m = 1 (tile_gemm): gemm_f32_rows and the online softmax compute every row of A
// on its own, in the same order for any m; the masks are applied row by row with that row's head.
// SIMD only (as tile_gemm's gemm_rows): the scalar path (Cortex-M) stays per head.

#include <cstddef>
#include <limits>

#include "attention/head_attention.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

// Scratch of a group: one score tile [min(rows, mha_group_rows) x bk] (bk = min(S_kv,
// mha_block_kv)) and the running row max and sum of all its rows [rows] (mha_slot_bytes holds
// them for rows <= group).
inline Status allocate_group(const AttentionShape& sh, std::size_t rows, ArenaRef& arena,
                             FusedScratch& f) noexcept {
  const std::size_t bk = mha_min(sh.seq_kv, mha_block_kv);
  EMHA_TRY(arena.allocate(mha_min(rows, mha_group_rows) * bk, f.s, 64));
  EMHA_TRY(arena.allocate(rows, f.row_max, 64));
  return arena.allocate(rows, f.row_sum, 64);
}

// The keys a query at position q_pos (HeadInputs::q_pos, S_q == 1) reads: attend_fused's range
// for q0 = 0 and one row (causal: none past its diagonal; a sliding window: none a window or more
// behind it). The same for every head of a sequence.
struct KeyRange {
  std::size_t begin, end;
};
inline KeyRange one_query_keys(const MhaDims& d, const AttentionShape& sh, const ForwardOptions& o,
                               const HeadInputs& in) noexcept {
  const std::size_t causal_end = causal_diagonal(o.masks, sh, in) + 1;
  const std::size_t end = o.masks.causal && causal_end < in.keys ? causal_end : in.keys;
  const std::size_t reach = in.q_pos + 1;
  return {d.window && reach > d.window ? reach - d.window : 0, end};
}

// Heads h0 .. h0 + rows - 1 of sequence b (one group's, or a part of it), S_q == 1, over the keys
// [keys.begin, keys.end) in tiles of mha_block_kv from keys.begin. `in` is head h0's (HeadInputs:
// its query, the group's K/V head, q_pos); slopes: ALiBi's per head, or null. out is head h0's
// columns of ctx. finish: divide by the sums (the whole range); else out, f.row_max and f.row_sum
// keep the unnormalized context, the max and the sum of the range (a chunk: split_attention.hpp).
// Kv8: an int8 cache's head (HeadInputs8), its rows read as int8 (score_rows, context_rows).
template <class K, bool Kv8>
[[gnu::noinline]] Status attend_group(const MhaDims& d, const AttentionShape& sh, const ForwardOptions& o,
                                      std::size_t b, std::size_t h0, std::size_t rows, const HeadInputsOf<Kv8>& in,
                                      const float* slopes, float scale, KeyRange keys, bool finish,
                                      const FusedScratch& f, const HeadOutput& out) noexcept {
  constexpr float neg_inf = -std::numeric_limits<float>::infinity();
  const std::size_t dk = d.d_k(), lds = mha_min(in.keys, mha_block_kv);
  for (std::size_t r = 0; r < rows; ++r) {
    f.row_max[r] = neg_inf;
    f.row_sum[r] = 0.0f;
  }
  for (std::size_t k0 = keys.begin; k0 < keys.end; k0 += mha_block_kv) {
    const std::size_t bk = keys.end - k0 < mha_block_kv ? keys.end - k0 : mha_block_kv;
    for (std::size_t c0 = 0; c0 < rows; c0 += mha_group_rows) {
      const std::size_t m = rows - c0 < mha_group_rows ? rows - c0 : mha_group_rows;
      float* ctx = out.ctx + c0 * out.ld;  // the heads' columns of ctx's one row, or a chunk's
      score_rows<K>(m, bk, dk, in.q + c0 * dk, dk, in, k0, f.s, lds, scale);
      for (std::size_t r = 0; r < m; ++r) {  // row r is head h: its slope, its masks
        const std::size_t h = h0 + c0 + r;
        HeadInputs row = in;
        row.alibi_slope = slopes ? slopes[h] : 0.0f;
        apply_masks(d, sh, o.masks, b, h, 0, k0, 1, bk, row, f.s + r * lds, lds);
      }
      K::softmax_online_update_f32(m, bk, f.s, lds, f.row_max + c0, f.row_sum + c0, ctx, out.ld, dk);
      context_rows<K>(m, dk, bk, f.s, lds, in, k0, ctx, out.ld, k0 == keys.begin ? 0.0f : 1.0f);
    }
  }
  if (finish) K::softmax_online_finish_f32(rows, dk, f.row_sum, out.ctx, out.ld);
  return Status::ok;
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

// SPDX-License-Identifier: Apache-2.0
#pragma once
// One head of attention over one sequence, from its projected Q_h [S_q x d_k], K_h and V_h
// [S_kv x d_k] (rows `ld` apart) into its columns of the context ctx_h [S_q x d_k]:
//   unfused: S = scale Q_h K_h^T [S_q x S_kv], masks, P = softmax(S), ctx_h = P V_h; P can be
//            handed to the caller (attention weights);
//   fused:   flash-attention style, query tiles of mha_block_q rows (each tile an item a task
//            of the stage runs) against key tiles of mha_block_kv with the online softmax: the
//            score matrix never exists whole, so the scratch is constant in S_kv.
// Both apply the same masks through apply_masks(), so they agree to float rounding.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "attention/kernel_set.hpp"
#include "attention/return_on_error.hpp"
#include "emha/detail/mha_plan.hpp"
#include "emha/kernels/mask.hpp"
#include "emha/kernels/relative_bias.hpp"
#include "isa_kernels.hpp"
#include "simd_arch.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

struct HeadInputs {
  const float* q;       // [S_q x d_k]
  std::size_t ld_q;     // row stride of q
  const float* k;       // [keys x d_k]
  const float* v;       // [keys x d_k]
  std::size_t ld_kv;    // row stride of k and v
  std::size_t keys;     // keys this sequence attends over: S_kv, or with a cache its length + S_q
  std::size_t q_pos;    // position of query 0 among the keys: 0, or with a cache its length
  float alibi_slope;    // ALiBi: -slope * |i - j| joins the scaled scores; 0: no ALiBi
  const RelativeBias* relative;  // T5's bias, else null
};

// A head over an int8 cache (Config::kv_cache_type): its K rows [keys x d_k] (row stride ld_kv =
// d_k), and in HeadInputs' k and v the K and V rows' scales [keys]. Its V rows sit as far after
// its K rows, in rows, as its V scales after its K scales (the cache's one layout, kv_cache.hpp):
// v8(). A type of its own, chosen at compile time (mha_stage_kv8), so that a float cache's paths
// keep their frames (Cortex-M stack) and link no dequantization; one pointer, for the same reason.
struct HeadInputs8 : HeadInputs {
  const std::int8_t* k8;
  const std::int8_t* v8() const noexcept { return k8 + (v - k) * std::ptrdiff_t(ld_kv); }
};
template <bool Kv8>
using HeadInputsOf = std::conditional_t<Kv8, HeadInputs8, HeadInputs>;

struct HeadOutput {
  float* ctx;      // [S_q x d_k] columns of this head
  std::size_t ld;  // row stride of ctx
};

// Scratch of the fused path: one score tile [bq x bk] (bq = min(S_q, mha_block_q), bk =
// min(S_kv, mha_block_kv)) and the running row max and sum of the online softmax [bq]; with an
// int8 cache, a dequantized K and V tile [bk x d_k] each (allocate_kv_tiles).
struct FusedScratch {
  float* s;
  float* row_max;
  float* row_sum;
};
// kt: the K tile [bk x d_k], then the V tile (v_tile), bk = min(S_kv, mha_block_kv).
struct FusedScratch8 : FusedScratch {
  float* kt;
  float* v_tile(const AttentionShape& sh, std::size_t dk) const noexcept {
    return kt + mha_min(sh.seq_kv, mha_block_kv) * dk;
  }
};
template <bool Kv8>
using FusedScratchOf = std::conditional_t<Kv8, FusedScratch8, FusedScratch>;

// An int8 cache's K and V tiles (every path's buffers, after its own); none for a float cache.
inline Status allocate_kv_tiles(const MhaDims&, const AttentionShape&, ArenaRef&, FusedScratch&) noexcept {
  return Status::ok;
}
inline Status allocate_kv_tiles(const MhaDims& d, const AttentionShape& sh, ArenaRef& arena,
                                FusedScratch8& f) noexcept {
  return arena.allocate(2 * mha_min(sh.seq_kv, mha_block_kv) * d.d_k(), f.kt, 64);
}

// Keys [k0, k0 + bk) of a head (bk <= mha_block_kv): their K and V rows where they are (floats),
// or an int8 cache's dequantized into f's tiles (row stride d_k): the tile the products read.
struct KvTile {
  const float* k;
  const float* v;
  std::size_t ld;
};
template <class K>
[[gnu::always_inline]] inline KvTile kv_tile(const HeadInputs& in, std::size_t, std::size_t k0, std::size_t,
                                             const FusedScratch&, const AttentionShape&) noexcept {
  return {in.k + k0 * in.ld_kv, in.v + k0 * in.ld_kv, in.ld_kv};
}
// Out of line: its calls' arguments stay off the paths' frames (Cortex-M stack).
template <class K>
[[gnu::noinline]] void dequantize_tile(const HeadInputs8& in, std::size_t k0, std::size_t bk, float* kt,
                                       float* vt) noexcept {
  const std::size_t dk = in.ld_kv;
  K::dequantize_rows_s8(bk, dk, in.k8 + k0 * dk, dk, in.k + k0, kt, dk);
  K::dequantize_rows_s8(bk, dk, in.v8() + k0 * dk, dk, in.v + k0, vt, dk);
}
template <class K>
[[gnu::always_inline]] inline KvTile kv_tile(const HeadInputs8& in, std::size_t dk, std::size_t k0, std::size_t bk,
                                             const FusedScratch8& f, const AttentionShape& sh) noexcept {
  float* const vt = f.v_tile(sh, dk);
  dequantize_tile<K>(in, k0, bk, f.kt, vt);
  return {f.kt, vt, dk};
}

// A few query rows' scores (scale Q K_t^T) and context (ctx (+)= P_t V_t, beta 0 or 1) against
// keys [k0, k0 + bk) read where they are: float rows (gemm_f32_rows), or an int8 cache's rows as
// int8 with each key's scale applied once per sum (gemm_w8a32_rows): no dequantized tile.
template <class K>
inline void score_rows(std::size_t m, std::size_t bk, std::size_t dk, const float* q, std::size_t ldq,
                       const HeadInputs& in, std::size_t k0, float* s, std::size_t lds, float scale) noexcept {
  K::gemm_f32_rows(m, bk, dk, q, ldq, in.k + k0 * in.ld_kv, in.ld_kv, Trans::transpose, s, lds,
                   GemmOptions{scale, 0.0f, nullptr});
}
template <class K>
inline void score_rows(std::size_t m, std::size_t bk, std::size_t dk, const float* q, std::size_t ldq,
                       const HeadInputs8& in, std::size_t k0, float* s, std::size_t lds, float scale) noexcept {
  K::gemm_w8a32_rows(m, bk, dk, q, ldq, in.k8 + k0 * dk, dk, in.k + k0, Trans::transpose, s, lds,
                     GemmOptions{scale, 0.0f, nullptr});
}
template <class K>
inline void context_rows(std::size_t m, std::size_t dk, std::size_t bk, const float* p, std::size_t ldp,
                         const HeadInputs& in, std::size_t k0, float* ctx, std::size_t ldc, float beta) noexcept {
  K::gemm_f32_rows(m, dk, bk, p, ldp, in.v + k0 * in.ld_kv, in.ld_kv, Trans::none, ctx, ldc,
                   GemmOptions{1.0f, beta, nullptr});
}
template <class K>
inline void context_rows(std::size_t m, std::size_t dk, std::size_t bk, const float* p, std::size_t ldp,
                         const HeadInputs8& in, std::size_t k0, float* ctx, std::size_t ldc, float beta) noexcept {
  K::gemm_w8a32_rows(m, dk, bk, p, ldp, in.v8() + k0 * dk, dk, in.v + k0, Trans::none, ctx, ldc,
                     GemmOptions{1.0f, beta, nullptr});
}

template <class T>
MaskView<T> mask_view(const MhaDims& d, const AttentionShape& sh, MaskShape m, const T* data) noexcept {
  const std::size_t block = sh.seq_q * sh.seq_kv;
  switch (m) {
    case MaskShape::shared: return {data, sh.seq_kv, 0, 0};
    case MaskShape::per_head: return {data, sh.seq_kv, block, 0};
    case MaskShape::per_batch_head: return {data, sh.seq_kv, block, d.heads * block};
  }
  return {data, sh.seq_kv, 0, 0};
}

// Query 0's causal diagonal: key j < S_kv is masked for query i when j > i + it. It is the
// head's q_pos (a cache's length) plus masks.causal_offset clamped to S_kv: every offset >= S_kv
// - 1 masks nothing, so the clamp changes no result, and it keeps the sums below (diagonal + q0
// + rows, the signed diagonal of a tile) far from overflow for any size_t the caller passes
// (SIZE_MAX included).
inline std::size_t causal_diagonal(const AttentionMasks& m, const AttentionShape& sh,
                                   const HeadInputs& in) noexcept {
  return (m.causal_offset < sh.seq_kv ? m.causal_offset : sh.seq_kv) + in.q_pos;
}

// Every term of (batch b, head h) on the scaled score block of queries [q0, q0 + rows) and keys
// [k0, k0 + cols), stored s[rows x cols] with row stride lds: the soft cap (Gemma 2's
// cap * tanh(s / cap), on the scaled scores first), ALiBi's or T5's bias, the masks (the
// sliding window's lower edge among them, at the queries' positions), then the
// score bias (torchscale adds rel_pos after its masks). Out of line: its locals stay off the
// frames of the paths that call it, which hold the GEMMs below them (Cortex-M stack).
[[gnu::noinline]] inline void apply_masks(const MhaDims& d, const AttentionShape& sh, const AttentionMasks& m,
                        std::size_t b, std::size_t h, std::size_t q0, std::size_t k0,
                        std::size_t rows, std::size_t cols, const HeadInputs& in, float* s,
                        std::size_t lds) noexcept {
  const std::ptrdiff_t positions = std::ptrdiff_t(in.q_pos + q0) - std::ptrdiff_t(k0);  // query 0 - key 0
  if (d.softcap != 0.0f) mask_softcap_f32(rows, cols, d.softcap, s, lds);  // Gemma 2: before the rest
  if (in.alibi_slope != 0.0f) mask_alibi_f32(rows, cols, positions, in.alibi_slope, s, lds);
  if (in.relative) mask_relative_bias_f32(rows, cols, positions, *in.relative, h, s, lds);
  if (m.causal)
    mask_causal_f32(rows, cols, std::ptrdiff_t(causal_diagonal(m, sh, in) + q0) - std::ptrdiff_t(k0), s, lds);
  if (d.window) mask_window_f32(rows, cols, positions, d.window, s, lds);
  if (m.key_lengths.data) {
    const std::size_t len = m.key_lengths.data[b];
    mask_key_valid_f32(rows, cols, len > k0 ? len - k0 : 0, s, lds);
  }
  if (m.key_ignored.data) mask_key_ignore_f32(rows, cols, m.key_ignored.data + b * sh.seq_kv + k0, s, lds);
  if (m.attn_masked.data) {
    const auto view = mask_view(d, sh, m.attn_mask_shape, m.attn_masked.data);
    mask_bool_f32(rows, cols, view.block(b, h) + q0 * view.ld + k0, view.ld, s, lds);
  }
  if (m.attn_additive.data) {
    const auto view = mask_view(d, sh, m.attn_mask_shape, m.attn_additive.data);
    mask_add_f32(rows, cols, view.block(b, h) + q0 * view.ld + k0, view.ld, s, lds);
  }
  if (m.attend.data) {  // [attend_rows, S_kv, attend_batch], broadcast where a size is 1
    const std::size_t nb = m.attend_batch, ld_row = m.attend_rows > 1 ? sh.seq_kv * nb : 0;
    const bool* keep = m.attend.data + q0 * ld_row + k0 * nb + (nb > 1 ? b : 0);
    mask_attend_f32(rows, cols, keep, ld_row, nb, s, lds);
  }
  if (m.score_bias.data) {
    const auto view = mask_view(d, sh, m.score_bias_shape, m.score_bias.data);
    mask_add_f32(rows, cols, view.block(b, h) + q0 * view.ld + k0, view.ld, s, lds);
  }
}

// Probabilities of head h into the caller's attention-weights buffer for batch b.
inline void store_weights(const MhaDims& d, const AttentionShape& sh, const ForwardOptions& o,
                          std::size_t b, std::size_t h, const float* p) noexcept {
  const std::size_t block = sh.seq_q * sh.seq_kv;
  if (!o.average_attn_weights) {
    float* dst = o.attn_weights.data + (b * d.heads + h) * block;
    for (std::size_t i = 0; i < block; ++i) dst[i] = p[i];
    return;
  }
  float* dst = o.attn_weights.data + b * block;  // mean over heads: sum, then / heads at the last
  if (h == 0)
    for (std::size_t i = 0; i < block; ++i) dst[i] = p[i];
  else
    for (std::size_t i = 0; i < block; ++i) dst[i] += p[i];
  if (h + 1 == d.heads) {
    const float inv = 1.0f / float(d.heads);
    for (std::size_t i = 0; i < block; ++i) dst[i] *= inv;
  }
}

// The attention paths below (unfused, fused) are kept out of the forward pass's frame
// ([[gnu::noinline]]): inlined, their locals and spills would sit in mha_forward's frame on
// Cortex-M, on top of every GEMM below it (tests/firmware/stack_budget.py); out of line, only the
// path that runs is on the stack.

// The unfused path's scores [S_q, keys] (row stride S_kv) into probabilities: the masks, the
// softmax, zeros past a cached sequence's keys, and the caller's copy of the weights. One
// definition for both unfused paths (float and int8 K/V).
template <class K>
[[gnu::noinline]] void unfused_probabilities(const MhaDims& d, const AttentionShape& sh, const ForwardOptions& o,
                                             std::size_t b, std::size_t h, const HeadInputs& in,
                                             float* scores) noexcept {
  const std::size_t sq = sh.seq_q, skv = sh.seq_kv, keys = in.keys;
  apply_masks(d, sh, o.masks, b, h, 0, 0, sq, keys, in, scores, skv);
  K::softmax_f32(sq, keys, scores, skv, scores, skv, SoftmaxOptions{});
  for (std::size_t i = 0; i < sq; ++i)  // a cached sequence shorter than S_kv: weight 0 past it
    for (std::size_t j = keys; j < skv; ++j) scores[i * skv + j] = 0.0f;
  if (o.attn_weights.data) store_weights(d, sh, o, b, h, scores);
}

// An int8 cache's unfused head: K, then V, in key tiles dequantized as read (the task's K and V
// tiles); the context summed tile after tile.
template <class K>
[[gnu::noinline]] Status attend_unfused_int8(const MhaDims& d, const AttentionShape& sh, const ForwardOptions& o,
                                            std::size_t b, std::size_t h, const HeadInputs8& in, float scale,
                                            float* scores, const HeadOutput& out, ArenaRef& arena) noexcept {
  const std::size_t sq = sh.seq_q, skv = sh.seq_kv, dk = d.d_k();
  FusedScratch8 f{};
  EMHA_TRY(allocate_kv_tiles(d, sh, arena, f));
  for (std::size_t k0 = 0; k0 < in.keys; k0 += mha_block_kv) {
    const std::size_t bk = mha_min(in.keys - k0, mha_block_kv);
    K::dequantize_rows_s8(bk, dk, in.k8 + k0 * dk, dk, in.k + k0, f.kt, dk);
    EMHA_TRY(K::gemm_f32(sq, bk, dk, in.q, in.ld_q, f.kt, dk, Trans::transpose, scores + k0, skv, arena,
                         GemmOptions{scale, 0.0f, nullptr}));
  }
  unfused_probabilities<K>(d, sh, o, b, h, in, scores);
  for (std::size_t k0 = 0; k0 < in.keys; k0 += mha_block_kv) {
    const std::size_t bk = mha_min(in.keys - k0, mha_block_kv);
    K::dequantize_rows_s8(bk, dk, in.v8() + k0 * dk, dk, in.v + k0, f.kt, dk);  // K's tile is free
    EMHA_TRY(K::gemm_f32(sq, dk, bk, scores + k0, skv, f.kt, dk, Trans::none, out.ctx, out.ld, arena,
                         GemmOptions{1.0f, k0 == 0 ? 0.0f : 1.0f, nullptr}));
  }
  return Status::ok;
}

template <class K>
[[gnu::noinline]] Status attend_unfused(const MhaDims& d, const AttentionShape& sh, const ForwardOptions& o,
                      std::size_t b, std::size_t h, const HeadInputs& in, float scale,
                      float* scores, const HeadOutput& out, ArenaRef& arena) noexcept {
  const std::size_t sq = sh.seq_q, skv = sh.seq_kv, keys = in.keys, dk = d.d_k();
  EMHA_TRY(K::gemm_f32(sq, keys, dk, in.q, in.ld_q, in.k, in.ld_kv, Trans::transpose, scores, skv, arena,
                       GemmOptions{scale, 0.0f, nullptr}));
  unfused_probabilities<K>(d, sh, o, b, h, in, scores);
  return K::gemm_f32(sq, dk, keys, scores, skv, in.v, in.ld_kv, Trans::none, out.ctx, out.ld, arena, {});
}


// Query tiles of the fused path: rows [q0, q0 + mha_block_q) for q0 = 0, mha_block_q, ...
inline std::size_t fused_tiles(const AttentionShape& sh) noexcept {
  return (sh.seq_q + mha_block_q - 1) / mha_block_q;
}

// Query tiles of at most this many rows (a decode step's new tokens) multiply with gemm_f32_rows,
// which reads K and V in place: packing a head's keys for a row or two moved every cached byte
// twice (emha_bench_decode).
inline constexpr std::size_t mha_rows_in_place = 4;

// A score or context product of the fused path: gemm_rows for a short query tile, else gemm.
// Direct calls, not a function pointer: a firmware's stack bound follows them. Not where
// simd::lean_stack (Cortex-M, armv6): there gemm_rows' frame takes forward over the 1 KiB stack
// budget (tests/firmware/stack_budget.py), and without a data cache the packing it saves costs a
// copy, not a second trip to memory.
template <class K>
Status tile_gemm(std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda,
                 const float* b, std::size_t ldb, Trans t, float* c, std::size_t ldc, ArenaRef& arena,
                 const GemmOptions& o) noexcept {
  if constexpr (!simd::lean_stack) {
    if (m <= mha_rows_in_place) {
      K::gemm_f32_rows(m, n, k, a, lda, b, ldb, t, c, ldc, o);
      return Status::ok;
    }
  }
  return K::gemm_f32(m, n, k, a, lda, b, ldb, t, c, ldc, arena, o);
}

// Query tiles of an int8 cache's head of at most mha_rows_in_place rows read its int8 rows
// (score_rows, context_rows), as tile_gemm runs gemm_rows: not where simd::lean_stack.
template <bool Kv8>
inline constexpr bool int8_rows_in_place = Kv8 && !simd::lean_stack;

// The fused path for query rows [q0, q0 + mha_block_q) of head h (one task's item).
// Kv8: an int8 cache's head (HeadInputs8): a short tile reads its int8 rows
// (int8_rows_in_place), a longer one its key tiles dequantized into f's.
template <class K, bool Kv8>
[[gnu::noinline]] Status attend_fused(const MhaDims& d, const AttentionShape& sh, const ForwardOptions& o,
                    std::size_t b, std::size_t h, std::size_t q0, const HeadInputsOf<Kv8>& in, float scale,
                    const FusedScratchOf<Kv8>& f, const HeadOutput& out, ArenaRef& arena) noexcept {
  constexpr float neg_inf = -std::numeric_limits<float>::infinity();
  const std::size_t sq = sh.seq_q, skv = in.keys, dk = d.d_k(), lds = mha_min(skv, mha_block_kv);
  const std::size_t bq = sq - q0 < mha_block_q ? sq - q0 : mha_block_q;
  float* ctx = out.ctx + q0 * out.ld;  // not cleared: the first key tile stores, later ones add
  for (std::size_t i = 0; i < bq; ++i) {
    f.row_max[i] = neg_inf;
    f.row_sum[i] = 0.0f;
  }
  // Causal: keys past the tile's last query are masked for all its rows; a sliding window: keys
  // a window or more behind its first query. Neither range is read.
  const std::size_t causal_end = causal_diagonal(o.masks, sh, in) + q0 + bq;
  const std::size_t k_end = o.masks.causal && causal_end < skv ? causal_end : skv;
  const std::size_t reach = in.q_pos + q0 + 1;  // one past the first query's position
  const std::size_t k_begin = d.window && reach > d.window ? reach - d.window : 0;
  for (std::size_t k0 = k_begin; k0 < k_end; k0 += mha_block_kv) {
    const std::size_t bk = k_end - k0 < mha_block_kv ? k_end - k0 : mha_block_kv;
    const bool int8_rows = int8_rows_in_place<Kv8> && bq <= mha_rows_in_place;
    const KvTile t = int8_rows ? KvTile{} : kv_tile<K>(in, dk, k0, bk, f, sh);
    if (int8_rows)
      score_rows<K>(bq, bk, dk, in.q + q0 * in.ld_q, in.ld_q, in, k0, f.s, lds, scale);
    else
      EMHA_TRY(tile_gemm<K>(bq, bk, dk, in.q + q0 * in.ld_q, in.ld_q, t.k, t.ld, Trans::transpose, f.s, lds,
                            arena, GemmOptions{scale, 0.0f, nullptr}));
    apply_masks(d, sh, o.masks, b, h, q0, k0, bq, bk, in, f.s, lds);
    K::softmax_online_update_f32(bq, bk, f.s, lds, f.row_max, f.row_sum, ctx, out.ld, dk);
    if (int8_rows)
      context_rows<K>(bq, dk, bk, f.s, lds, in, k0, ctx, out.ld, k0 == k_begin ? 0.0f : 1.0f);
    else
      EMHA_TRY(tile_gemm<K>(bq, dk, bk, f.s, lds, t.v, t.ld, Trans::none, ctx, out.ld, arena,
                            GemmOptions{1.0f, k0 == k_begin ? 0.0f : 1.0f, nullptr}));
  }
  K::softmax_online_finish_f32(bq, dk, f.row_sum, ctx, out.ld);
  return Status::ok;
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

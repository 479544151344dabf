// SPDX-License-Identifier: Apache-2.0
#pragma once
// The size-erased core of MultiHeadAttention: dimensions as values, so that one compiled
// forward() (lib/src/attention/mha_forward.cpp) serves every Config.

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "emha/arena.hpp"
#include "emha/attention/config.hpp"
#include "emha/detail/config_check.hpp"
#include "emha/attention/options.hpp"
#include "emha/kernels/gemm.hpp"
#include "emha/kernels/gemm_w8a32.hpp"
#include "emha/kernels/relative_bias.hpp"
#include "emha/status.hpp"

namespace emha::detail {

struct MhaDims {
  std::size_t d_model = 0, heads = 0, kv_heads = 0, kdim = 0, vdim = 0, max_seq_q = 0, max_seq_kv = 0,
              max_batch = 0;
  std::size_t head_dim = 0;  // d_k, resolved
  std::size_t q_width = 0;   // heads * head_dim, stored: one load, not a product, where it is used
  float scale = 0;           // Config::scale: the scores' scale, 0 for 1/sqrt(head_dim)
  bool bias[4] = {};     // Q, K, V, output projection has a bias
  bool prepack = false;
  bool int8_weights = false;  // WeightType::int8: the projections' weights int8 with row scales
  bool kv_int8 = false;       // KvType::int8: a KvCache holds int8 rows with a scale each
  std::size_t slot_bytes = 0;  // mha_slot_bytes: one task slot's scratch (computed at compile time)
  bool weights = false;  // the unfused path (attention weights out) is available
  std::size_t threads = 0;  // scratch slots: tasks forward() splits a stage into, at most
  Position position = Position::none;
  RopePairing rope_pairing = RopePairing::half;
  std::size_t rope_dims = 0;  // rotated dims per head (rope: Config::rope_dims or d_k; xpos: d_k)
  float rope_base = 0, xpos_scale_base = 0;
  RopeScalingParams rope_scaling{};  // rope only
  std::size_t window = 0;  // sliding window: keys a query keeps, its own included; 0: all
  float softcap = 0;        // attn_logit_softcapping: cap * tanh(score / cap); 0: none
  NormPlacement norm = NormPlacement::none;
  NormKind norm_kind = NormKind::layer_norm;
  float norm_eps = 0;
  bool norm_affine = false;
  QkNorm qk_norm = QkNorm::none;
  float qk_norm_eps = 0;
  bool qk_norm_unit_offset = false;  // the object holds 1 + w (mha_unit_offset): the stage sees w
  HeadSplit head_split = HeadSplit::columns;
  std::size_t relative_buckets = 0, relative_max_distance = 0;  // relative_bias only
  bool relative_bidirectional = false;

  constexpr std::size_t d_k() const noexcept { return head_dim; }
  // Width of projected Q and of the heads' concatenated outputs: heads * d_k.
  constexpr std::size_t q_dim() const noexcept { return q_width; }
  // Width of projected K and of V: kv_heads * d_k (q_dim without GQA).
  constexpr std::size_t kv_dim() const noexcept { return kv_heads * d_k(); }
  // Width of the projected [Q | K | V] rows: q_dim + 2 * kv_dim.
  constexpr std::size_t qkv_dim() const noexcept { return q_dim() + 2 * kv_dim(); }
  // Query heads per K/V head: head h reads K/V head h / group().
  constexpr std::size_t group() const noexcept { return heads / kv_heads; }
  // Output width of projection i (0 Q, 1 K, 2 V) and its first column in [Q | K | V].
  constexpr std::size_t proj_dim(int i) const noexcept { return i == 0 ? q_dim() : kv_dim(); }
  constexpr std::size_t proj_col(int i) const noexcept { return i == 0 ? 0 : q_dim() + (i - 1) * kv_dim(); }
  constexpr bool same_embed_dim() const noexcept { return kdim == d_model && vdim == d_model; }
  // Floats of in_proj_bias: the widths of Q, K, V that have a bias.
  constexpr std::size_t in_bias_floats() const noexcept {
    return std::size_t(bias[0]) * q_dim() + (std::size_t(bias[1]) + bias[2]) * kv_dim();
  }
  constexpr std::size_t max_positions() const noexcept {
    return max_seq_q < max_seq_kv ? max_seq_kv : max_seq_q;
  }
  // Floats of sub-LN's norm (the heads' outputs) or of the other placements' (the layer's rows).
  constexpr std::size_t norm_dim() const noexcept { return norm == NormPlacement::sub ? q_dim() : d_model; }
  // Floats of q_norm_weight and k_norm_weight (0 without QK-norm).
  constexpr std::size_t q_norm_dim() const noexcept {
    return qk_norm == QkNorm::none ? 0 : qk_norm == QkNorm::per_head ? d_k() : q_dim();
  }
  constexpr std::size_t k_norm_dim() const noexcept {
    return qk_norm == QkNorm::none ? 0 : qk_norm == QkNorm::per_head ? d_k() : kv_dim();
  }
};

// The scores' scale of a Config scale (0: 1 / sqrt(head_dim), rounded twice as PyTorch's
// q / sqrt(d_k)): forward() uses it unless ForwardOptions::scale is set, and a blob's scale is
// compared with a Config's once both are resolved by it.
inline float resolved_scale(float scale, std::size_t head_dim) noexcept {
  return scale != 0.0f ? scale : 1.0f / std::sqrt(float(head_dim));
}

constexpr std::size_t mha_slot_bytes(const MhaDims& d) noexcept;

// The dims of a Config (checked by check_config).
template <class C>
constexpr MhaDims mha_dims() noexcept {
  MhaDims d;
  d.d_model = C::d_model;
  d.heads = C::heads;
  d.kv_heads = C::kv_heads;
  d.kdim = C::kdim;
  d.vdim = C::vdim;
  d.max_seq_q = C::max_seq_q;
  d.max_seq_kv = C::max_seq_kv;
  d.max_batch = C::max_batch;
  d.head_dim = C::head_dim != 0 ? C::head_dim : C::d_model / C::heads;
  d.q_width = d.heads * d.head_dim;
  d.scale = C::scale;
  const ProjectionBias pb = C::projection_bias;
  d.bias[0] = C::bias && pb.q;
  d.bias[1] = C::bias && pb.k;
  d.bias[2] = C::bias && pb.v;
  d.bias[3] = C::bias && pb.out;
  d.prepack = C::prepack_weights;
  d.int8_weights = C::weight_type == WeightType::int8;
  d.kv_int8 = C::kv_cache_type == KvType::int8;
  d.weights = C::attention_weights;
  d.threads = C::max_threads;
  d.position = C::position;
  d.rope_pairing = C::position == Position::xpos ? RopePairing::interleaved : C::rope_pairing;
  d.rope_dims = C::position == Position::rope && C::rope_dims != 0 ? C::rope_dims : d.head_dim;
  d.rope_base = C::position == Position::xpos ? 10000.0f : C::rope_base;
  d.xpos_scale_base = C::xpos_scale_base;
  if (C::position == Position::rope) d.rope_scaling = C::rope_scaling;
  d.window = C::sliding_window;
  d.softcap = C::attn_logit_softcapping;
  d.norm = C::norm;
  d.norm_kind = C::norm_kind;
  d.norm_eps = C::norm_eps;
  d.norm_affine = C::norm_affine;
  d.qk_norm = C::qk_norm;
  d.qk_norm_eps = C::qk_norm_eps;
  d.qk_norm_unit_offset = C::qk_norm_unit_offset;
  d.head_split = C::head_split;
  if (C::position == Position::relative_bias) {
    d.relative_buckets = C::relative_buckets;
    d.relative_max_distance = C::relative_max_distance;
    d.relative_bidirectional = C::relative_bidirectional;
  }
  d.slot_bytes = mha_slot_bytes(d);  // last: it reads the fields above
  return d;
}

// The dims of a Config once check_config has passed: a layer's base class is sized by them, and
// a bad Config fails with check_config's sentence before any size is computed from it.
template <class C>
constexpr MhaDims checked_dims() noexcept {
  static_assert(check_config<C>(), "invalid MhaConfig");
  return mha_dims<C>();
}

// Floats of the position tables an object holds: RoPE/xPos cos and sin [positions x rope_dims/2]
// each, ALiBi's slopes [heads], T5's bucket of each distance 0 .. relative_max_distance.
constexpr std::size_t mha_position_floats(const MhaDims& d) noexcept {
  if (d.position == Position::rope || d.position == Position::xpos)
    return 2 * rope_table_floats(d.max_positions(), d.rope_dims);
  if (d.position == Position::relative_bias) return d.relative_max_distance + 1;
  return d.position == Position::alibi ? d.heads : 0;
}

// The filled tables (mha_fill_positions), or nulls. relative.table is the weights'
// relative_attention_bias, set with them (MultiHeadAttention::set_weights).
struct MhaPositions {
  RopeTable rope;
  const float* alibi_slopes;
  RelativeBias relative;
};

// Fill `storage` (mha_position_floats(d) floats) with d's tables, one per kind of position.
MhaPositions mha_fill_rope(const MhaDims& d, float* storage) noexcept;
MhaPositions mha_fill_rope_scaled(const MhaDims& d, float* storage) noexcept;
MhaPositions mha_fill_alibi(const MhaDims& d, float* storage) noexcept;
MhaPositions mha_fill_relative(const MhaDims& d, float* storage) noexcept;

// The tables of d = mha_dims<C>(): the filler of C's position, chosen at compile time so that a
// firmware links only that one (and none without positions).
template <class C>
MhaPositions mha_fill_positions(const MhaDims& d, float* storage) noexcept {
  if constexpr (C::position == Position::rope && C::rope_scaling.type != RopeScaling::none)
    return mha_fill_rope_scaled(d, storage);
  else if constexpr (C::position == Position::rope || C::position == Position::xpos) return mha_fill_rope(d, storage);
  else if constexpr (C::position == Position::alibi) return mha_fill_alibi(d, storage);
  else if constexpr (C::position == Position::relative_bias) return mha_fill_relative(d, storage);
  else return MhaPositions{};
}

constexpr std::size_t mha_max(std::size_t a, std::size_t b) noexcept { return a < b ? b : a; }

// What a forward() does with a KvCache.
enum class KvUse : unsigned char {
  append,  // self-attention decoding: the new tokens' K | V appended, their queries attend to all
  read,    // cross-attention over static K/V (project_kv's): the queries attend to the held rows
  fill,    // project_kv: the key and value inputs' K | V projected into the rows, replacing them
};

// A KvCache (emha/attention/kv_cache.hpp) as forward() sees it, head-major: sequence b, K (kind 0)
// or V (1), K/V head g is a block [capacity x d_k] at data + ((b * 2 + kind) * kv_heads + g) *
// capacity * d_k (the dims of the MhaDims it goes with: the cache's type ties it to the Config).
// Sequence b holds positions firsts[b] .. lengths[b] - 1, position p in row p - firsts[b] of each
// block. firsts[b] is 0 unless the cache rolls (window > 0).
struct KvCacheView {
  float* data;            // float rows, or null for an int8 cache (data8)
  std::int8_t* data8;     // int8 rows in data's layout, or null
  float* scales;          // int8: one per row, [b][kind][g][position], or null
  std::size_t* lengths;  // [batch] positions seen: the next new token's position
  std::size_t* firsts;   // [batch] position of row 0
  std::size_t capacity, batch;
  std::size_t window;    // a rolling cache's sliding window (<= capacity), else 0
  KvUse use;

  // Rows sequence b holds: positions firsts[b] .. lengths[b] - 1.
  std::size_t held(std::size_t b) const noexcept { return lengths[b] - firsts[b]; }
};

// K/V rows a call projects per sequence: S_kv; with a cache, the S_q new tokens (append), none
// (read) or the S_kv key and value rows (fill).
inline std::size_t kv_rows_projected(const AttentionShape& sh, const KvCacheView* c) noexcept {
  if (!c || c->use == KvUse::fill) return sh.seq_kv;
  return c->use == KvUse::append ? sh.seq_q : 0;
}

// Rows a sequence holding `held` rows keeps before n new ones are appended: all of them, unless
// the cache rolls and they would not fit, when it keeps the last window - 1 (what the first new
// query's window still needs).
constexpr std::size_t kv_rows_kept(std::size_t held, std::size_t n, std::size_t capacity,
                                   std::size_t window) noexcept {
  if (window == 0 || n <= capacity - held) return held;
  return held < window - 1 ? held : window - 1;
}

// Pre-packed projection weights and their sizes, or all null: gemm_f32_pack_b's float panels
// of W^T, or with int8 weights gemm_w8a32_pack_b's int8 panels (their scales inside).
struct MhaPacked {
  const void* w[4];      // W_q, W_k, W_v, W_out
  std::size_t bytes[4];  // bytes of each
};

// Bytes of the packed W [n x k] (used as W^T), a multiple of 64 so that the next starts aligned.
constexpr std::size_t mha_packed_bytes(const MhaDims& d, std::size_t n, std::size_t k) noexcept {
  const std::size_t b = d.int8_weights ? gemm_w8a32_packed_b_bytes(n, k) : gemm_f32_packed_b_floats(n, k) * sizeof(float);
  return (b + 63) / 64 * 64;
}

// Floats an object holds for the four packed matrices: W_q^T [d_model x q_dim], W_k^T [kdim x
// kv_dim], W_v^T [vdim x kv_dim], W_out^T [q_dim x d_model].
constexpr std::size_t mha_packed_floats(const MhaDims& d) noexcept {
  return (mha_packed_bytes(d, d.q_dim(), d.d_model) + mha_packed_bytes(d, d.kv_dim(), d.kdim) +
          mha_packed_bytes(d, d.kv_dim(), d.vdim) + mha_packed_bytes(d, d.d_model, d.q_dim())) / sizeof(float);
}

// Tiles of the fused path: query rows and keys per block (multiples of every micro-kernel tile).
inline constexpr std::size_t mha_block_q = 192;
inline constexpr std::size_t mha_block_kv = 192;

constexpr std::size_t mha_min(std::size_t a, std::size_t b) noexcept { return a < b ? a : b; }

// A decode step's query heads of one GQA/MQA group go through one pass over their shared K/V
// head (lib/src/attention/group_attention.hpp), stacked as rows of its products in chunks of at
// most this many (each chunk one score tile [rows x mha_block_kv]).
inline constexpr std::size_t mha_group_rows = 4;

// One query token over more keys than this (a decode step over a long cache) goes in chunks of
// this many keys, each an item of its own, combined after (lib/src/attention/split_attention.hpp):
// whole key tiles, and few enough items that a step of 8 heads over 2048 keys keeps 16 workers
// busy. Fixed: the chunks, so the bits, never depend on the workers.
inline constexpr std::size_t mha_split_keys = 2 * mha_block_kv;

// Floats of the chunks' partial contexts, maxima and sums of one such query: per chunk
// [q_dim + 2 heads], up to max_seq_kv keys; none when max_seq_kv keys are one chunk.
constexpr std::size_t mha_split_floats(const MhaDims& d) noexcept {
  const std::size_t chunks = (d.max_seq_kv + mha_split_keys - 1) / mha_split_keys;
  return chunks > 1 ? chunks * (d.q_dim() + 2 * d.heads) : 0;
}

// Scratch bytes of one task slot (a thread's share of a stage), a multiple of 64. One stage at a
// time: a projection GEMM's scratch (pre-packed: none for float weights, one dequantized panel
// for int8; a task's column block needs at most what the whole product does); the flat head split's copy of one of Q, K, V or the
// context [rows x max(q_dim, kv_dim)] (in the first slot); or the heads' buffers: fused, one score tile, the online
// softmax's row max and sum, and the tile GEMMs' scratch; with GQA/MQA, a decode step's stacked
// group (group_attention.hpp): a score tile of at most mha_group_rows of its rows and the row
// max and sum of all of them (no more than the fused path's when S_q >= group); unfused, one
// head's scores [S_q, S_kv] and its GEMMs' scratch. Each buffer may lose 64 bytes to alignment.
constexpr std::size_t mha_slot_bytes(const MhaDims& d) noexcept {
  const std::size_t f = sizeof(float);
  const std::size_t rows = mha_max(d.max_seq_q, d.max_seq_kv);
  const std::size_t in_max = mha_max(d.d_model, mha_max(d.kdim, d.vdim));
  const std::size_t project =
      d.prepack ? (d.int8_weights ? mha_max(gemm_w8a32_prepacked_scratch_bytes(rows, d.qkv_dim(), in_max),
                                            gemm_w8a32_prepacked_scratch_bytes(d.max_seq_q, d.d_model, d.q_dim()))
                                  : 0)
                : mha_max(gemm_f32_scratch_bytes(rows, d.qkv_dim(), in_max),
                          gemm_f32_scratch_bytes(d.max_seq_q, d.d_model, d.q_dim()));  // out_proj
  const std::size_t flat =
      d.head_split == HeadSplit::flat_view ? rows * mha_max(d.q_dim(), d.kv_dim()) * f + 64 : 0;
  const std::size_t bq = mha_min(d.max_seq_q, mha_block_q), bk = mha_min(d.max_seq_kv, mha_block_kv);
  // An int8 KvCache: the fused and unfused paths dequantize one K and one V tile [bk x d_k] at a
  // time (not a fused tile of a few rows, nor a stacked group: those read the int8 rows).
  const std::size_t kv_tiles = d.kv_int8 ? 2 * (bk * d.d_k() * f + 64) : 0;
  const std::size_t fused = kv_tiles + (bq * bk * f + 64) + 2 * (bq * f + 64) +
                            mha_max(gemm_f32_scratch_bytes(bq, bk, d.d_k()),      // Q_t K_t^T
                                    gemm_f32_scratch_bytes(bq, d.d_k(), bk));     // P_t V_t
  const std::size_t group = d.kv_heads < d.heads ? d.heads / d.kv_heads : 0;
  const std::size_t stacked =
      group ? (mha_min(group, mha_group_rows) * bk * f + 64) + 2 * (group * f + 64) : 0;
  const std::size_t unfused = kv_tiles + (d.max_seq_q * d.max_seq_kv * f + 64) +
                              mha_max(gemm_f32_scratch_bytes(d.max_seq_q, d.max_seq_kv, d.d_k()),
                                      gemm_f32_scratch_bytes(d.max_seq_q, d.d_k(), d.max_seq_kv));
  return arena_round_up(
      mha_max(mha_max(mha_max(project, flat), stacked), mha_max(fused, d.weights ? unfused : 0)), 64);
}

// Arena bytes forward() takes at most. Live throughout: projected Q|K|V rows
// [max(S_q, S_kv), qkv_dim], the concatenated heads [S_q, q_dim], the split query's chunks
// (mha_split_floats, if any) and `threads` task slots (mha_slot_bytes) in one block; each may
// lose 64 bytes to alignment.
constexpr std::size_t mha_arena_bytes(const MhaDims& d) noexcept {
  const std::size_t f = sizeof(float);
  const std::size_t rows = mha_max(d.max_seq_q, d.max_seq_kv), split = mha_split_floats(d);
  const std::size_t live = (rows * d.qkv_dim() * f + 64) + (d.max_seq_q * d.q_dim() * f + 64) +
                           (split ? split * f + 64 : 0);
  return live + (d.threads * mha_slot_bytes(d) + 64);
}

// Packs the projection weights of `w` (checked) into `packed` (mha_packed_floats(d) floats).
MhaPacked mha_pack_weights(const MhaDims& d, const MhaWeights& w, float* packed) noexcept;

// w with q_norm_weight and k_norm_weight replaced by 1 + each (Gemma's RMSNorm computes
// x_hat * (1 + w) in float: the same float), written to `storage` (q_norm_dim + k_norm_dim floats).
MhaWeights mha_unit_offset(const MhaDims& d, const MhaWeights& w, float* storage) noexcept;

// Checks that every weight span the dims need is present with exactly its element count.
Status mha_check_weights(const MhaDims& d, const MhaWeights& w) noexcept;

// The whole forward pass; see MultiHeadAttention::forward. `w` has passed mha_check_weights.
// With a cache (else null): self-attention of the new tokens `query` (key and value are the
// same span) over the cache's positions and their own, appended to it.
Status mha_forward(const MhaDims& d, const MhaWeights& w, const MhaPacked& packed,
                   const MhaPositions& positions, ArenaRef& arena,
                   const AttentionShape& shape, Span<const float> query, Span<const float> key,
                   Span<const float> value, Span<float> out, const ForwardOptions& options,
                   const KvCacheView* cache) noexcept;

// The stages a Config's pass can run beyond the projections, the cache's, attention and the
// output projection, one bit each (the norms with the residual; RoPE; xPos; QK-norm; the flat
// head split), whether its projections' weights are int8 and whether its KvCache is. forward() calls
// mha_forward_staged<mha_stages<Config>()>: on builds of one variant its code references only
// those stages and that weight type's GEMMs, so a firmware links no other (x86's run-time
// dispatch runs the whole pass, mha_forward).
inline constexpr unsigned mha_stage_norm = 1, mha_stage_rope = 2, mha_stage_xpos = 4, mha_stage_qk_norm = 8,
                          mha_stage_flat = 16, mha_stage_int8 = 32, mha_stage_kv8 = 64, mha_stages_all = 31;
template <class C>
constexpr unsigned mha_stages() noexcept {
  return (C::norm != NormPlacement::none ? mha_stage_norm : 0u) | (C::position == Position::rope ? mha_stage_rope : 0u) |
         (C::position == Position::xpos ? mha_stage_xpos : 0u) | (C::qk_norm != QkNorm::none ? mha_stage_qk_norm : 0u) |
         (C::head_split == HeadSplit::flat_view ? mha_stage_flat : 0u) |
         (C::weight_type == WeightType::int8 ? mha_stage_int8 : 0u) |
         (C::kv_cache_type == KvType::int8 ? mha_stage_kv8 : 0u);
}

// mha_forward for dims whose Config's stages are among Stages (mha_stages) and whose weight type
// is Stages' (mha_stage_int8), as its cache type (mha_stage_kv8), for every stage set of
// EMHA_FOR_EACH_STAGE_SET.
template <unsigned Stages>
Status mha_forward_staged(const MhaDims& d, const MhaWeights& w, const MhaPacked& packed,
                          const MhaPositions& positions, ArenaRef& arena,
                          const AttentionShape& shape, Span<const float> query, Span<const float> key,
                          Span<const float> value, Span<float> out, const ForwardOptions& options,
                          const KvCacheView* cache) noexcept;
// Instantiates mha_forward_staged for every stage set a Config can have (mha_stages): RoPE and
// xPos are one Config::position, and the flat split has none.
#define EMHA_FOR_EACH_STAGE_SET(X) \
  X(0) X(1) X(2) X(3) X(4) X(5) X(8) X(9) X(10) X(11) X(12) X(13) X(16) X(17) X(24) X(25) X(32) X(33) \
  X(34) X(35) X(36) X(37) X(40) X(41) X(42) X(43) X(44) X(45) X(48) X(49) X(56) X(57) X(64) X(65) \
  X(66) X(67) X(68) X(69) X(72) X(73) X(74) X(75) X(76) X(77) X(80) X(81) X(88) X(89) X(96) X(97) \
  X(98) X(99) X(100) X(101) X(104) X(105) X(106) X(107) X(108) X(109) X(112) X(113) X(120) X(121)
#define EMHA_INSTANTIATE_STAGED(n) template decltype(mha_forward_staged<n>) mha_forward_staged<n>;

// The same pass on the scalar reference kernels (gemm_f32_ref, softmax_f32_ref): float weights,
// and (mha_forward_ref_int8) int8 ones (gemm_w8a32_ref), apart so that a layer links one.
Status mha_forward_ref(const MhaDims& d, const MhaWeights& w, const MhaPositions& positions,
                       ArenaRef& arena,
                       const AttentionShape& shape, Span<const float> query, Span<const float> key,
                       Span<const float> value, Span<float> out, const ForwardOptions& options,
                       const KvCacheView* cache) noexcept;
Status mha_forward_ref_int8(const MhaDims& d, const MhaWeights& w, const MhaPositions& positions,
                            ArenaRef& arena, const AttentionShape& shape, Span<const float> query,
                            Span<const float> key, Span<const float> value, Span<float> out,
                            const ForwardOptions& options, const KvCacheView* cache) noexcept;

}  // namespace emha::detail

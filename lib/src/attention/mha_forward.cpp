// MultiHeadAttention forward pass: per sequence of the batch,
//   [Q | K | V] = inputs * W_in^T + b_in   (pre-packed weights, or one GEMM for self-attention)
//   per head h: ctx_h = softmax(scale Q_h K_h^T + masks) V_h   (head_attention.hpp: fused unless
//               the caller wants the attention weights)
//   out = ctx * W_out^T + b_out
// Arguments are validated first (mha_validate.cpp), so an error leaves the outputs untouched.

#include <cmath>

#include "attention/head_attention.hpp"
#include "attention/kernel_set.hpp"
#include "attention/mha_validate.hpp"
#include "attention/parallel.hpp"
#include "attention/return_on_error.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {
namespace {

// Rows of one sequence inside a [B, S, D] or [S, B, D] tensor: start and row stride.
template <class T>
struct Rows {
  T* p;
  std::size_t ld;
};
template <class T>
Rows<T> rows_of(T* base, std::size_t b, std::size_t seq, std::size_t dim,
                const AttentionShape& sh) noexcept {
  if (sh.layout == Layout::batch_first) return {base + b * seq * dim, dim};
  return {base + b * dim, sh.batch * dim};
}

// The input projection weights as three row blocks of W_in.
struct InProj {
  const float* w[3];
  std::size_t ld[3];
  const float* bias[3];
};

InProj in_proj(const MhaDims& d, const MhaWeights& w) noexcept {
  const std::size_t dd = d.d_model * d.d_model;
  InProj p{};
  if (d.same_embed_dim()) {
    for (int i = 0; i < 3; ++i) {
      p.w[i] = w.in_proj_weight.data + i * dd;
      p.ld[i] = d.d_model;
    }
  } else {
    p.w[0] = w.q_proj_weight.data;
    p.w[1] = w.k_proj_weight.data;
    p.w[2] = w.v_proj_weight.data;
    p.ld[0] = d.d_model;
    p.ld[1] = d.kdim;
    p.ld[2] = d.vdim;
  }
  for (int i = 0; i < 3; ++i) p.bias[i] = d.bias ? w.in_proj_bias.data + i * d.d_model : nullptr;
  return p;
}

// qkv[r][i*D .. (i+1)*D) = x_r * W_i^T + b_i for i in [first, first + count) (count == 1 when
// the weights are pre-packed: `packed` holds their panels, else all null), in column blocks
// over the task slots. Inlined: its own frame only held the Product (Cortex-M4 -Os stack).
template <class K>
[[gnu::always_inline]] inline Status project(const MhaDims& d, const InProj& p, const MhaPacked& packed, int first, int count,
               Rows<const float> x, std::size_t rows, float* qkv, const TaskSlots& slots) noexcept {
  const Product product{rows,          count * d.d_model,     p.ld[first], x.p,
                        x.ld,          p.w[first],            p.ld[first], packed.w[first],
                        packed.floats[first], p.bias[first],  qkv + first * d.d_model,
                        3 * d.d_model};
  return run_product<K>(product, slots);
}

// The fused path's buffers for one query tile, from a task's slot.
Status allocate_fused(const AttentionShape& sh, ArenaRef& arena, FusedScratch& f) noexcept {
  const std::size_t bq = mha_min(sh.seq_q, mha_block_q), bk = mha_min(sh.seq_kv, mha_block_kv);
  EMHA_TRY(arena.allocate(bq * bk, f.s, 64));
  EMHA_TRY(arena.allocate(bq, f.row_max, 64));
  return arena.allocate(bq, f.row_sum, 64);
}

// What the stages of one call read: its arguments and the two arena buffers that live across
// the pass. Built once per call and passed by reference; each stage runs out of line, so that
// only the running stage's locals are on the stack (the deepest chain, forward -> a stage ->
// a head -> a GEMM, is what a firmware must reserve: tests/firmware/stack_budget.py).
struct Pass {
  const MhaDims& d;
  const MhaWeights& w;
  const MhaPacked& packed;
  ArenaRef& arena;
  const AttentionShape& sh;
  const ForwardOptions& o;
  Span<const float> query, key, value;
  Span<float> out;
  float* qkv;  // [max(S_q, S_kv), 3 * d_model]: Q | K | V of the current sequence
  float* ctx;  // [S_q, d_model]: the heads' outputs, concatenated
  TaskSlots slots;  // each task's scratch (parallel.hpp)
};

// Stage 1: [Q | K | V] of sequence b. Blocks that share one input are one GEMM (self-attention:
// all three; key == value: K and V) unless the weights are pre-packed.
template <class K>
[[gnu::noinline]] Status project_stage(const Pass& s, std::size_t b) noexcept {
  const MhaDims& d = s.d;
  const std::size_t sq = s.sh.seq_q, skv = s.sh.seq_kv;
  const InProj p = in_proj(d, s.w);
  const MhaPacked& pk = s.packed;
  const bool fuse_kv = d.same_embed_dim() && s.key.data == s.value.data && !pk.w[1];
  const bool fuse_qkv = fuse_kv && s.query.data == s.key.data && sq == skv;
  const Rows<const float> xq = rows_of(s.query.data, b, sq, d.d_model, s.sh);
  if (fuse_qkv) return project<K>(d, p, pk, 0, 3, xq, sq, s.qkv, s.slots);
  EMHA_TRY(project<K>(d, p, pk, 0, 1, xq, sq, s.qkv, s.slots));
  const Rows<const float> xk = rows_of(s.key.data, b, skv, d.kdim, s.sh);
  if (fuse_kv) return project<K>(d, p, pk, 1, 2, xk, skv, s.qkv, s.slots);
  EMHA_TRY(project<K>(d, p, pk, 1, 1, xk, skv, s.qkv, s.slots));
  return project<K>(d, p, pk, 2, 1, rows_of(s.value.data, b, skv, d.vdim, s.sh), skv, s.qkv, s.slots);
}

// Stage 2: every head of sequence b into ctx, fused unless the attention weights are wanted.
// Items: fused, (head, query tile) pairs; unfused, heads, or all heads as one item when their
// weights are averaged (each head adds into the same average, in head order).
template <class K>
[[gnu::noinline]] Status attend_stage(const Pass& s, std::size_t b) noexcept {
  const MhaDims& d = s.d;
  const std::size_t D = d.d_model, dk = d.d_k(), ld = 3 * D;
  const bool fused = s.o.attn_weights.data == nullptr;
  const float scale = s.o.scale != 0.0f ? s.o.scale : 1.0f / std::sqrt(float(dk));
  const auto inputs = [&](std::size_t h) {
    return HeadInputs{s.qkv + h * dk, s.qkv + D + h * dk, s.qkv + 2 * D + h * dk, ld};
  };
  const auto output = [&](std::size_t h) { return HeadOutput{s.ctx + h * dk, D}; };
  const std::size_t flops = 4 * s.sh.seq_q * s.sh.seq_kv * D;
  if (fused) {
    const std::size_t tiles = fused_tiles(s.sh), items = d.heads * tiles;
    return for_items(s.slots, items, stage_tasks(s.slots, items, flops),
                     [&](std::size_t i, ArenaRef& arena) noexcept {
      // Tile-major: a task's items (i, i + tasks, ...) spread over the tiles, which differ in
      // size (the last one is short), rather than taking every first tile.
      const std::size_t h = i % d.heads;
      ArenaScope scope(arena);
      FusedScratch f{};
      EMHA_TRY(allocate_fused(s.sh, arena, f));
      return attend_fused<K>(d, s.sh, s.o, b, h, i / d.heads * mha_block_q, inputs(h), scale, f,
                             output(h), arena);
    });
  }
  const std::size_t per_item = s.o.average_attn_weights ? d.heads : 1, items = d.heads / per_item;
  return for_items(s.slots, items, stage_tasks(s.slots, items, flops),
                   [&](std::size_t i, ArenaRef& arena) noexcept {
    for (std::size_t h = i * per_item; h < (i + 1) * per_item; ++h) {
      ArenaScope scope(arena);
      float* scores = nullptr;
      EMHA_TRY(arena.allocate(s.sh.seq_q * s.sh.seq_kv, scores, 64));
      EMHA_TRY(attend_unfused<K>(d, s.sh, s.o, b, h, inputs(h), scale, scores, output(h), arena));
    }
    return Status::ok;
  });
}

// Stage 3: out rows of sequence b = ctx * W_out^T + b_out.
template <class K>
[[gnu::noinline]] Status output_stage(const Pass& s, std::size_t b) noexcept {
  const std::size_t D = s.d.d_model;
  const Rows<float> y = rows_of(s.out.data, b, s.sh.seq_q, D, s.sh);
  const Product product{s.sh.seq_q, D, D, s.ctx, D, s.w.out_proj_weight.data, D, s.packed.w[3],
                        s.packed.floats[3], s.d.bias ? s.w.out_proj_bias.data : nullptr, y.p, y.ld};
  return run_product<K>(product, s.slots);
}

template <class K>
Status forward_with(const MhaDims& d, const MhaWeights& w, const MhaPacked& packed, ArenaRef& arena,
                    const AttentionShape& sh, Span<const float> query, Span<const float> key,
                    Span<const float> value, Span<float> out, const ForwardOptions& o) noexcept {
  EMHA_TRY(mha_check_call(d, w, arena, sh, query, key, value, out, o));
  ArenaScope scope(arena);
  Pass s{d, w, packed, arena, sh, o, query, key, value, out, nullptr, nullptr, {nullptr, mha_slot_bytes(d), d.threads}};
  const std::size_t rows = sh.seq_q > sh.seq_kv ? sh.seq_q : sh.seq_kv;
  EMHA_TRY(arena.allocate(rows * 3 * d.d_model, s.qkv, 64));
  EMHA_TRY(arena.allocate(sh.seq_q * d.d_model, s.ctx, 64));
  EMHA_TRY(arena.allocate(d.threads * s.slots.bytes, s.slots.base, 64));
  for (std::size_t b = 0; b < sh.batch; ++b) {
    EMHA_TRY(project_stage<K>(s, b));
    EMHA_TRY(attend_stage<K>(s, b));
    EMHA_TRY(output_stage<K>(s, b));
  }
  return Status::ok;
}

}  // namespace

MhaPacked pack_weights(const MhaDims& d, const MhaWeights& w, float* packed) noexcept {
  const InProj p = in_proj(d, w);
  const std::size_t D = d.d_model;
  const float* src[4] = {p.w[0], p.w[1], p.w[2], w.out_proj_weight.data};
  const std::size_t in[4] = {p.ld[0], p.ld[1], p.ld[2], D};
  MhaPacked out{};
  for (int i = 0; i < 4; ++i) {
    const std::size_t floats = gemm_f32_packed_b_floats(D, in[i]);
    // op(B) = W^T: [in x D] from W [D x in]; `floats` is exactly what gemm_f32_pack_b needs.
    if (detail::gemm_f32_pack_b(D, in[i], src[i], in[i], Trans::transpose, packed, floats) != Status::ok)
      return MhaPacked{};
    out.w[i] = packed;
    out.floats[i] = floats;
    packed += floats;
  }
  return out;
}

Status forward_pass(const MhaDims& d, const MhaWeights& w, const MhaPacked& packed, ArenaRef& arena,
                   const AttentionShape& sh, Span<const float> query, Span<const float> key,
                   Span<const float> value, Span<float> out, const ForwardOptions& o) noexcept {
  return forward_with<SimdKernels>(d, w, packed, arena, sh, query, key, value, out, o);
}

Status forward_pass_ref(const MhaDims& d, const MhaWeights& w, ArenaRef& arena,
                       const AttentionShape& sh, Span<const float> query, Span<const float> key,
                       Span<const float> value, Span<float> out, const ForwardOptions& o) noexcept {
  return forward_with<RefKernels>(d, w, MhaPacked{}, arena, sh, query, key, value, out, o);
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

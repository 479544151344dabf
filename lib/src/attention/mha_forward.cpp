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
// the weights are pre-packed: `packed` holds their panels, else all null).
template <class K>
Status project(const MhaDims& d, const InProj& p, const MhaPacked& packed, int first, int count,
               Rows<const float> x, std::size_t rows, float* qkv, ArenaRef& arena) noexcept {
  const std::size_t ldqkv = 3 * d.d_model;
  if (packed.w[first])
    return K::gemm_prepacked(rows, d.d_model, p.ld[first], x.p, x.ld, packed.w[first],
                             packed.floats[first], qkv + first * d.d_model, ldqkv,
                             GemmOptions{1.0f, 0.0f, p.bias[first]});
  return K::gemm(rows, count * d.d_model, p.ld[first], x.p, x.ld, p.w[first], p.ld[first],
                  Trans::transpose, qkv + first * d.d_model, ldqkv, arena,
                  GemmOptions{1.0f, 0.0f, p.bias[first]});
}

// The per-head buffers of one sequence, allocated after the projections' scratch is released.
struct HeadScratch {
  float* scores = nullptr;  // unfused: [S_q x S_kv]
  FusedScratch fused{};
};

Status allocate_heads(const AttentionShape& sh, bool fused, ArenaRef& arena, HeadScratch& hs) noexcept {
  if (!fused) return arena.allocate(sh.seq_q * sh.seq_kv, hs.scores, 64);
  const std::size_t bq = mha_min(sh.seq_q, mha_block_q), bk = mha_min(sh.seq_kv, mha_block_kv);
  EMHA_TRY(arena.allocate(bq * bk, hs.fused.s, 64));
  EMHA_TRY(arena.allocate(bq, hs.fused.row_max, 64));
  return arena.allocate(bq, hs.fused.row_sum, 64);
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
  if (fuse_qkv) return project<K>(d, p, pk, 0, 3, xq, sq, s.qkv, s.arena);
  EMHA_TRY(project<K>(d, p, pk, 0, 1, xq, sq, s.qkv, s.arena));
  const Rows<const float> xk = rows_of(s.key.data, b, skv, d.kdim, s.sh);
  if (fuse_kv) return project<K>(d, p, pk, 1, 2, xk, skv, s.qkv, s.arena);
  EMHA_TRY(project<K>(d, p, pk, 1, 1, xk, skv, s.qkv, s.arena));
  return project<K>(d, p, pk, 2, 1, rows_of(s.value.data, b, skv, d.vdim, s.sh), skv, s.qkv, s.arena);
}

// Stage 2: every head of sequence b into ctx, fused unless the attention weights are wanted.
template <class K>
[[gnu::noinline]] Status attend_stage(const Pass& s, std::size_t b) noexcept {
  const MhaDims& d = s.d;
  const std::size_t D = d.d_model, dk = d.d_k(), ld = 3 * D;
  const bool fused = s.o.attn_weights.data == nullptr;
  const float scale = s.o.scale != 0.0f ? s.o.scale : 1.0f / std::sqrt(float(dk));
  ArenaScope heads_scope(s.arena);
  HeadScratch hs;
  EMHA_TRY(allocate_heads(s.sh, fused, s.arena, hs));
  for (std::size_t h = 0; h < d.heads; ++h) {
    const HeadInputs in{s.qkv + h * dk, s.qkv + D + h * dk, s.qkv + 2 * D + h * dk, ld};
    const HeadOutput ho{s.ctx + h * dk, D};
    if (fused) {
      EMHA_TRY(attend_fused<K>(d, s.sh, s.o, b, h, in, scale, hs.fused, ho, s.arena));
    } else {
      EMHA_TRY(attend_unfused<K>(d, s.sh, s.o, b, h, in, scale, hs.scores, ho, s.arena));
    }
  }
  return Status::ok;
}

// Stage 3: out rows of sequence b = ctx * W_out^T + b_out.
template <class K>
[[gnu::noinline]] Status output_stage(const Pass& s, std::size_t b) noexcept {
  const std::size_t D = s.d.d_model, sq = s.sh.seq_q;
  const Rows<float> y = rows_of(s.out.data, b, sq, D, s.sh);
  const GemmOptions out_bias{1.0f, 0.0f, s.d.bias ? s.w.out_proj_bias.data : nullptr};
  if (s.packed.w[3])
    return K::gemm_prepacked(sq, D, D, s.ctx, D, s.packed.w[3], s.packed.floats[3], y.p, y.ld, out_bias);
  return K::gemm(sq, D, D, s.ctx, D, s.w.out_proj_weight.data, D, Trans::transpose, y.p, y.ld,
                 s.arena, out_bias);
}

template <class K>
Status forward_with(const MhaDims& d, const MhaWeights& w, const MhaPacked& packed, ArenaRef& arena,
                    const AttentionShape& sh, Span<const float> query, Span<const float> key,
                    Span<const float> value, Span<float> out, const ForwardOptions& o) noexcept {
  EMHA_TRY(mha_check_call(d, w, arena, sh, query, key, value, out, o));
  ArenaScope scope(arena);
  Pass s{d, w, packed, arena, sh, o, query, key, value, out, nullptr, nullptr};
  const std::size_t rows = sh.seq_q > sh.seq_kv ? sh.seq_q : sh.seq_kv;
  EMHA_TRY(arena.allocate(rows * 3 * d.d_model, s.qkv, 64));
  EMHA_TRY(arena.allocate(sh.seq_q * d.d_model, s.ctx, 64));
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

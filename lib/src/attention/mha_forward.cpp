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
  const float* packed[3];  // gemm_f32_pack_b panels of W_i^T, or null
  std::size_t packed_floats[3];
};

InProj in_proj(const MhaDims& d, const MhaWeights& w, const MhaPacked& packed) noexcept {
  const std::size_t dd = d.d_model * d.d_model;
  InProj p{};
  for (int i = 0; i < 3; ++i) {
    p.packed[i] = packed.w[i];
    p.packed_floats[i] = packed.floats[i];
  }
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

// qkv[r][i*D .. (i+1)*D) = x_r * W_i^T + b_i for i in [first, first + count): blocks that share
// one input are one GEMM (self-attention: all three; key == value: K and V) unless the weights
// are pre-packed (then count == 1).
template <class K>
Status project(const MhaDims& d, const InProj& p, int first, int count, Rows<const float> x,
               std::size_t rows, float* qkv, ArenaRef& arena) noexcept {
  const std::size_t ldqkv = 3 * d.d_model;
  if (p.packed[first])
    return K::gemm_prepacked(rows, d.d_model, p.ld[first], x.p, x.ld, p.packed[first],
                             p.packed_floats[first], qkv + first * d.d_model, ldqkv,
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

template <class K>
Status forward_with(const MhaDims& d, const MhaWeights& w, const MhaPacked& packed, ArenaRef& arena,
                    const AttentionShape& sh, Span<const float> query, Span<const float> key,
                    Span<const float> value, Span<float> out, const ForwardOptions& o) noexcept {
  EMHA_TRY(mha_check_call(d, w, arena, sh, query, key, value, out, o));

  ArenaScope scope(arena);
  const std::size_t D = d.d_model, dk = d.d_k(), sq = sh.seq_q, skv = sh.seq_kv;
  const std::size_t rows = sq > skv ? sq : skv;
  float* qkv = nullptr;
  float* ctx = nullptr;
  EMHA_TRY(arena.allocate(rows * 3 * D, qkv, 64));
  EMHA_TRY(arena.allocate(sq * D, ctx, 64));

  const InProj p = in_proj(d, w, packed);
  const bool fuse_kv = d.same_embed_dim() && key.data == value.data && !packed.w[1];
  const bool fuse_qkv = fuse_kv && query.data == key.data && sq == skv;
  const bool fused = o.attn_weights.data == nullptr;
  const float scale = o.scale != 0.0f ? o.scale : 1.0f / std::sqrt(float(dk));
  const std::size_t ld = 3 * D;

  for (std::size_t b = 0; b < sh.batch; ++b) {
    const Rows<const float> xq = rows_of(query.data, b, sq, D, sh);
    const Rows<const float> xk = rows_of(key.data, b, skv, d.kdim, sh);
    const Rows<const float> xv = rows_of(value.data, b, skv, d.vdim, sh);
    if (fuse_qkv) {
      EMHA_TRY(project<K>(d, p, 0, 3, xq, sq, qkv, arena));
    } else {
      EMHA_TRY(project<K>(d, p, 0, 1, xq, sq, qkv, arena));
      if (fuse_kv) {
        EMHA_TRY(project<K>(d, p, 1, 2, xk, skv, qkv, arena));
      } else {
        EMHA_TRY(project<K>(d, p, 1, 1, xk, skv, qkv, arena));
        EMHA_TRY(project<K>(d, p, 2, 1, xv, skv, qkv, arena));
      }
    }

    {
      ArenaScope heads_scope(arena);
      HeadScratch hs;
      EMHA_TRY(allocate_heads(sh, fused, arena, hs));
      for (std::size_t h = 0; h < d.heads; ++h) {
        const HeadInputs in{qkv + h * dk, qkv + D + h * dk, qkv + 2 * D + h * dk, ld};
        const HeadOutput ho{ctx + h * dk, D};
        if (fused) {
          EMHA_TRY(attend_fused<K>(d, sh, o, b, h, in, scale, hs.fused, ho, arena));
        } else {
          EMHA_TRY(attend_unfused<K>(d, sh, o, b, h, in, scale, hs.scores, ho, arena));
        }
      }
    }

    const Rows<float> y = rows_of(out.data, b, sq, D, sh);
    const GemmOptions out_bias{1.0f, 0.0f, d.bias ? w.out_proj_bias.data : nullptr};
    if (packed.w[3]) {
      EMHA_TRY(K::gemm_prepacked(sq, D, D, ctx, D, packed.w[3], packed.floats[3], y.p, y.ld, out_bias));
    } else {
      EMHA_TRY(K::gemm(sq, D, D, ctx, D, w.out_proj_weight.data, D, Trans::transpose, y.p, y.ld,
                       arena, out_bias));
    }
  }
  return Status::ok;
}

}  // namespace

MhaPacked mha_pack_weights(const MhaDims& d, const MhaWeights& w, float* packed) noexcept {
  const InProj p = in_proj(d, w, MhaPacked{});
  const std::size_t D = d.d_model;
  const float* src[4] = {p.w[0], p.w[1], p.w[2], w.out_proj_weight.data};
  const std::size_t in[4] = {p.ld[0], p.ld[1], p.ld[2], D};
  MhaPacked out{};
  for (int i = 0; i < 4; ++i) {
    const std::size_t floats = gemm_f32_packed_b_floats(D, in[i]);
    // op(B) = W^T: [in x D] from W [D x in]; `floats` is exactly what gemm_f32_pack_b needs.
    if (gemm_f32_pack_b(D, in[i], src[i], in[i], Trans::transpose, packed, floats) != Status::ok)
      return MhaPacked{};
    out.w[i] = packed;
    out.floats[i] = floats;
    packed += floats;
  }
  return out;
}

Status mha_forward(const MhaDims& d, const MhaWeights& w, const MhaPacked& packed, ArenaRef& arena,
                   const AttentionShape& sh, Span<const float> query, Span<const float> key,
                   Span<const float> value, Span<float> out, const ForwardOptions& o) noexcept {
  return forward_with<SimdKernels>(d, w, packed, arena, sh, query, key, value, out, o);
}

Status mha_forward_ref(const MhaDims& d, const MhaWeights& w, ArenaRef& arena,
                       const AttentionShape& sh, Span<const float> query, Span<const float> key,
                       Span<const float> value, Span<float> out, const ForwardOptions& o) noexcept {
  return forward_with<RefKernels>(d, w, MhaPacked{}, arena, sh, query, key, value, out, o);
}

}  // namespace emha::detail

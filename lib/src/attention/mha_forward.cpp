// MultiHeadAttention forward pass (unfused): per batch,
//   [Q | K | V] = inputs * W_in^T + b_in          (one GEMM for self-attention)
//   per head h: S = scale * Q_h K_h^T, masks, P = softmax(S), ctx_h = P V_h
//   out = ctx * W_out^T + b_out
// Every input is validated before the first write, so an error leaves the outputs untouched.

#include <cmath>

#include "emha/attention/mha_plan.hpp"
#include "emha/kernels/gemm_ref.hpp"
#include "emha/kernels/mask.hpp"
#include "emha/kernels/softmax.hpp"
#include "emha/kernels/softmax_ref.hpp"

namespace emha::detail {
namespace {

// The kernels a forward pass runs on: the SIMD ones, or their scalar references (the oracle the
// benchmark and tests measure the SIMD path against).
struct SimdKernels {
  static Status gemm(std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda,
                     const float* b, std::size_t ldb, Trans t, float* c, std::size_t ldc,
                     ArenaRef& arena, const GemmOptions& o) noexcept {
    return gemm_f32(m, n, k, a, lda, b, ldb, t, c, ldc, arena, o);
  }
  static Status gemm_prepacked(std::size_t m, std::size_t n, std::size_t k, const float* a,
                               std::size_t lda, const float* packed_b, float* c, std::size_t ldc,
                               const GemmOptions& o) noexcept {
    return gemm_f32_prepacked(m, n, k, a, lda, packed_b, c, ldc, o);
  }
  static void softmax(std::size_t rows, std::size_t n, float* s, std::size_t lds,
                      const SoftmaxOptions& o) noexcept {
    softmax_f32(rows, n, s, lds, s, lds, o);
  }
};

struct RefKernels {
  static Status gemm(std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda,
                     const float* b, std::size_t ldb, Trans t, float* c, std::size_t ldc,
                     ArenaRef&, const GemmOptions& o) noexcept {
    gemm_f32_ref(m, n, k, a, lda, b, ldb, t, c, ldc, o);
    return Status::ok;
  }
  // The reference path always reads the weights in place (it is given no packed weights).
  static Status gemm_prepacked(std::size_t, std::size_t, std::size_t, const float*, std::size_t,
                               const float*, float*, std::size_t,
                               const GemmOptions&) noexcept {
    return Status::invalid_argument;
  }
  static void softmax(std::size_t rows, std::size_t n, float* s, std::size_t lds,
                      const SoftmaxOptions& o) noexcept {
    softmax_f32_ref(rows, n, s, lds, s, lds, o);
  }
};

// Span present with at least `n` elements (an empty span counts as absent).
template <class T>
Status check_span(Span<T> s, std::size_t n) noexcept {
  if (!s.data) return Status::null_pointer;
  return s.size < n ? Status::size_mismatch : Status::ok;
}

// Weight span present with exactly `n` elements.
Status check_weight(Span<const float> s, std::size_t n) noexcept {
  if (!s.data) return Status::null_pointer;
  return s.size != n ? Status::size_mismatch : Status::ok;
}

#define EMHA_TRY(expr)                            \
  do {                                            \
    const ::emha::Status emha_s_ = (expr);        \
    if (emha_s_ != ::emha::Status::ok) return emha_s_; \
  } while (0)

std::size_t mask_elements(const MhaDims& d, const AttentionShape& sh, MaskShape m) noexcept {
  const std::size_t block = sh.seq_q * sh.seq_kv;
  switch (m) {
    case MaskShape::shared: return block;
    case MaskShape::per_head: return d.heads * block;
    case MaskShape::per_batch_head: return sh.batch * d.heads * block;
  }
  return block;
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

Status check_masks(const MhaDims& d, const AttentionShape& sh, const AttentionMasks& m) noexcept {
  if (m.key_ignored.data || m.key_ignored.size) EMHA_TRY(check_span(m.key_ignored, sh.batch * sh.seq_kv));
  if (m.key_lengths.data || m.key_lengths.size) {
    EMHA_TRY(check_span(m.key_lengths, sh.batch));
    for (std::size_t b = 0; b < sh.batch; ++b)
      if (m.key_lengths.data[b] > sh.seq_kv) return Status::invalid_argument;
  }
  const std::size_t n = mask_elements(d, sh, m.attn_mask_shape);
  if (m.attn_masked.data || m.attn_masked.size) EMHA_TRY(check_span(m.attn_masked, n));
  if (m.attn_additive.data || m.attn_additive.size) EMHA_TRY(check_span(m.attn_additive, n));
  return Status::ok;
}

Status check_call(const MhaDims& d, const ArenaRef& arena, const AttentionShape& sh,
                  Span<const float> q, Span<const float> k, Span<const float> v, Span<float> out,
                  const ForwardOptions& o) noexcept {
  if (sh.seq_q == 0 || sh.seq_kv == 0 || sh.batch == 0) return Status::invalid_argument;
  if (sh.seq_q > d.max_seq_q || sh.seq_kv > d.max_seq_kv || sh.batch > d.max_batch)
    return Status::too_long;
  if (!std::isfinite(o.scale)) return Status::invalid_argument;
  EMHA_TRY(check_span(q, sh.batch * sh.seq_q * d.d_model));
  EMHA_TRY(check_span(k, sh.batch * sh.seq_kv * d.kdim));
  EMHA_TRY(check_span(v, sh.batch * sh.seq_kv * d.vdim));
  EMHA_TRY(check_span(out, sh.batch * sh.seq_q * d.d_model));
  if (o.attn_weights.data || o.attn_weights.size) {
    const std::size_t per_batch = sh.seq_q * sh.seq_kv * (o.average_attn_weights ? 1 : d.heads);
    EMHA_TRY(check_span(o.attn_weights, sh.batch * per_batch));
  }
  EMHA_TRY(check_masks(d, sh, o.masks));
  if (arena.available() < mha_arena_bytes(d)) return Status::no_space;
  return Status::ok;
}

// Rows of one sequence inside a [B, S, D] or [S, B, D] tensor: start and row stride.
struct Rows {
  const float* p;
  std::size_t ld;
};
Rows rows_of(const float* base, std::size_t b, std::size_t seq, std::size_t dim,
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
};

InProj in_proj(const MhaDims& d, const MhaWeights& w, const MhaPacked& packed) noexcept {
  const std::size_t dd = d.d_model * d.d_model;
  InProj p{};
  for (int i = 0; i < 3; ++i) p.packed[i] = packed.w[i];
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
Status project(const MhaDims& d, const InProj& p, int first, int count, Rows x, std::size_t rows,
               float* qkv, ArenaRef& arena) noexcept {
  const std::size_t ldqkv = 3 * d.d_model;
  if (p.packed[first])
    return K::gemm_prepacked(rows, d.d_model, p.ld[first], x.p, x.ld, p.packed[first],
                             qkv + first * d.d_model, ldqkv, GemmOptions{1.0f, 0.0f, p.bias[first]});
  return K::gemm(rows, count * d.d_model, p.ld[first], x.p, x.ld, p.w[first], p.ld[first],
                  Trans::transpose, qkv + first * d.d_model, ldqkv, arena,
                  GemmOptions{1.0f, 0.0f, p.bias[first]});
}

void apply_masks(const MhaDims& d, const AttentionShape& sh, const AttentionMasks& m,
                 std::size_t b, std::size_t h, float* s) noexcept {
  const std::size_t sq = sh.seq_q, skv = sh.seq_kv;
  if (m.causal) mask_causal_f32(sq, skv, m.causal_offset, s, skv);
  if (m.key_lengths.data) mask_key_valid_f32(sq, skv, m.key_lengths.data[b], s, skv);
  if (m.key_ignored.data) mask_key_ignore_f32(sq, skv, m.key_ignored.data + b * skv, s, skv);
  if (m.attn_masked.data) {
    const auto view = mask_view(d, sh, m.attn_mask_shape, m.attn_masked.data);
    mask_bool_f32(sq, skv, view.block(b, h), view.ld, s, skv);
  }
}

// Probabilities of head h into the caller's attention-weights buffer for batch b.
void store_weights(const MhaDims& d, const AttentionShape& sh, const ForwardOptions& o,
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
    packed += floats;
  }
  return out;
}

Status mha_check_weights(const MhaDims& d, const MhaWeights& w) noexcept {
  if (d.same_embed_dim()) {
    if (w.q_proj_weight.data || w.k_proj_weight.data || w.v_proj_weight.data) return Status::invalid_argument;
    EMHA_TRY(check_weight(w.in_proj_weight, 3 * d.d_model * d.d_model));
  } else {
    if (w.in_proj_weight.data) return Status::invalid_argument;
    EMHA_TRY(check_weight(w.q_proj_weight, d.d_model * d.d_model));
    EMHA_TRY(check_weight(w.k_proj_weight, d.d_model * d.kdim));
    EMHA_TRY(check_weight(w.v_proj_weight, d.d_model * d.vdim));
  }
  EMHA_TRY(check_weight(w.out_proj_weight, d.d_model * d.d_model));
  if (d.bias) {
    EMHA_TRY(check_weight(w.in_proj_bias, 3 * d.d_model));
    EMHA_TRY(check_weight(w.out_proj_bias, d.d_model));
  } else if (w.in_proj_bias.data || w.out_proj_bias.data) {
    return Status::invalid_argument;
  }
  return Status::ok;
}

namespace {

template <class K>
Status forward_with(const MhaDims& d, const MhaWeights& w, const MhaPacked& packed, ArenaRef& arena,
                    const AttentionShape& sh, Span<const float> query, Span<const float> key,
                    Span<const float> value, Span<float> out, const ForwardOptions& o) noexcept {
  EMHA_TRY(check_call(d, arena, sh, query, key, value, out, o));

  ArenaScope scope(arena);
  const std::size_t D = d.d_model, dk = d.d_k(), sq = sh.seq_q, skv = sh.seq_kv;
  const std::size_t rows = sq > skv ? sq : skv;
  float* qkv = nullptr;
  float* ctx = nullptr;
  float* scores = nullptr;
  EMHA_TRY(arena.allocate(rows * 3 * D, qkv, 64));
  EMHA_TRY(arena.allocate(sq * D, ctx, 64));
  EMHA_TRY(arena.allocate(sq * skv, scores, 64));

  const InProj p = in_proj(d, w, packed);
  const bool fuse_kv = d.same_embed_dim() && key.data == value.data && !packed.w[1];
  const bool fuse_qkv = fuse_kv && query.data == key.data && sq == skv;
  const float scale = o.scale != 0.0f ? o.scale : 1.0f / std::sqrt(float(dk));
  const bool weights_out = o.attn_weights.data != nullptr;
  const AttentionMasks& m = o.masks;
  const auto additive = mask_view(d, sh, m.attn_mask_shape, m.attn_additive.data);
  const std::size_t ld = 3 * D;

  for (std::size_t b = 0; b < sh.batch; ++b) {
    const Rows xq = rows_of(query.data, b, sq, D, sh);
    const Rows xk = rows_of(key.data, b, skv, d.kdim, sh);
    const Rows xv = rows_of(value.data, b, skv, d.vdim, sh);
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

    for (std::size_t h = 0; h < d.heads; ++h) {
      const float* qh = qkv + h * dk;
      const float* kh = qkv + D + h * dk;
      const float* vh = qkv + 2 * D + h * dk;
      EMHA_TRY(K::gemm(sq, skv, dk, qh, ld, kh, ld, Trans::transpose, scores, skv, arena,
                        GemmOptions{scale, 0.0f, nullptr}));
      apply_masks(d, sh, m, b, h, scores);
      SoftmaxOptions so{};
      if (additive.data) {
        so.mask = additive.block(b, h);
        so.ldmask = additive.ld;
      }
      K::softmax(sq, skv, scores, skv, so);
      if (weights_out) store_weights(d, sh, o, b, h, scores);
      EMHA_TRY(K::gemm(sq, dk, skv, scores, skv, vh, ld, Trans::none, ctx + h * dk, D, arena, {}));
    }

    const Rows yo = rows_of(out.data, b, sq, D, sh);
    float* y = const_cast<float*>(yo.p);
    const GemmOptions out_bias{1.0f, 0.0f, d.bias ? w.out_proj_bias.data : nullptr};
    if (packed.w[3]) {
      EMHA_TRY(K::gemm_prepacked(sq, D, D, ctx, D, packed.w[3], y, yo.ld, out_bias));
    } else {
      EMHA_TRY(K::gemm(sq, D, D, ctx, D, w.out_proj_weight.data, D, Trans::transpose, y, yo.ld,
                       arena, out_bias));
    }
  }
  return Status::ok;
}

}  // namespace

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

// SPDX-License-Identifier: Apache-2.0
// Input validation of MultiHeadAttention: everything is checked before the first write, so an
// error leaves the caller's outputs untouched. The rules for spans: span_checks.hpp.

#include <cmath>
#include <cstdint>

#include "attention/mha_validate.hpp"
#include "attention/span_checks.hpp"
#include "attention/return_on_error.hpp"

namespace emha::detail {
namespace {

// A projection's weight [rows x cols], if `used`: the float span, or with int8 weights the int8
// one and its row scales; the other kind's spans unused.
Status check_projection(const MhaDims& d, bool used, Span<const float> f, Span<const std::int8_t> q,
                        Span<const float> scale, std::size_t rows, std::size_t cols) noexcept {
  const bool q8 = used && d.int8_weights;
  EMHA_TRY(used && !q8 ? check_weight(f, rows * cols) : check_unused(f));
  EMHA_TRY(q8 ? check_weight(q, rows * cols) : check_unused(q));
  return q8 ? check_weight(scale, rows) : check_unused(scale);
}

bool valid(Layout l) noexcept { return l == Layout::batch_first || l == Layout::seq_first; }
bool valid(MaskShape m) noexcept {
  return m == MaskShape::shared || m == MaskShape::per_head || m == MaskShape::per_batch_head;
}

// The elements forward() reads or writes of each span, for one call's shape and options: the
// size checks and the overlap check both measure spans by these.
struct Elements {
  std::size_t query, key, value, out;  // [B, S, dim] each
  std::size_t attn_weights;            // [B, S_q, S_kv], times heads when not averaged
  std::size_t keys;                    // [B, S_kv]: key_ignored
  std::size_t attn_mask;               // attn_masked / attn_additive, per attn_mask_shape
  std::size_t attend;                  // [attend_rows, S_kv, attend_batch]
  std::size_t score_bias;              // per score_bias_shape
};

// new_kv: key and value rows per sequence (S_kv; with a cache, the S_q new tokens).
Elements elements(const MhaDims& d, const AttentionShape& sh, const ForwardOptions& o,
                  std::size_t new_kv) noexcept {
  const AttentionMasks& m = o.masks;
  return {sh.batch * sh.seq_q * d.d_model,
          sh.batch * new_kv * d.kdim,
          sh.batch * new_kv * d.vdim,
          sh.batch * sh.seq_q * d.d_model,
          sh.batch * sh.seq_q * sh.seq_kv * (o.average_attn_weights ? 1 : d.heads),
          sh.batch * sh.seq_kv,
          mask_elements(d, sh, m.attn_mask_shape),
          m.attend_rows * sh.seq_kv * m.attend_batch,
          mask_elements(d, sh, m.score_bias_shape)};
}

Status check_masks(const AttentionShape& sh, const AttentionMasks& m, const Elements& n) noexcept {
  if (!valid(m.attn_mask_shape)) return Status::invalid_argument;
  EMHA_TRY(check_optional(m.key_ignored, n.keys));
  EMHA_TRY(check_optional(m.key_lengths, sh.batch));
  for (std::size_t b = 0; m.key_lengths.data && b < sh.batch; ++b)
    if (m.key_lengths.data[b] > sh.seq_kv) return Status::invalid_argument;
  EMHA_TRY(check_optional(m.attn_masked, n.attn_mask));
  EMHA_TRY(check_optional(m.attn_additive, n.attn_mask));
  if (given(m.attend)) {  // labml: [S_q or 1, S_kv, B or 1]
    if (m.attend_rows != 1 && m.attend_rows != sh.seq_q) return Status::invalid_argument;
    if (m.attend_batch != 1 && m.attend_batch != sh.batch) return Status::invalid_argument;
    EMHA_TRY(check_span(m.attend, n.attend));
  }
  if (!valid(m.score_bias_shape)) return Status::invalid_argument;
  return check_optional(m.score_bias, n.score_bias);
}

// Positions (rope, xpos, alibi) and the sliding window are self-attention's: query row i and key
// row i are position i, which needs the same rows for all three inputs.
Status check_positions(const MhaDims& d, const AttentionShape& sh, Span<const float> q,
                       Span<const float> k, Span<const float> v) noexcept {
  if (d.position == Position::none && d.window == 0) return Status::ok;
  const bool self = k.data == q.data && v.data == q.data && sh.seq_q == sh.seq_kv;
  return self ? Status::ok : Status::invalid_argument;
}

// An output that shares a byte with anything forward() reads, or with the other output or the
// arena, would be read after it was written (a later sequence's inputs, masks or weights) or
// overwrite scratch in use.
// A cache is written too (its rows past the lengths): it must not share a byte with anything
// else forward() touches.
Status check_no_overlap(const MhaDims& d, const MhaWeights& w, const ArenaRef& arena, const AttentionShape& sh,
                        Span<const float> q, Span<const float> k, Span<const float> v,
                        Span<float> out, const ForwardOptions& o, const Elements& n,
                        const KvCacheView* cache) noexcept {
  const AttentionMasks& m = o.masks;
  const Bytes reads[] = {
      bytes_of(q.data, n.query),
      bytes_of(k.data, n.key),
      bytes_of(v.data, n.value),
      bytes_of(m.key_ignored.data, n.keys),
      bytes_of(m.key_lengths.data, sh.batch),
      bytes_of(m.attn_masked.data, n.attn_mask),
      bytes_of(m.attn_additive.data, n.attn_mask),
      bytes_of(m.attend.data, n.attend),
      bytes_of(m.score_bias.data, n.score_bias),
      bytes_of(w.in_proj_weight.data, w.in_proj_weight.size),
      bytes_of(w.q_proj_weight.data, w.q_proj_weight.size),
      bytes_of(w.k_proj_weight.data, w.k_proj_weight.size),
      bytes_of(w.v_proj_weight.data, w.v_proj_weight.size),
      bytes_of(w.in_proj_bias.data, w.in_proj_bias.size),
      bytes_of(w.out_proj_weight.data, w.out_proj_weight.size),
      bytes_of(w.out_proj_bias.data, w.out_proj_bias.size),
      bytes_of(w.norm_weight.data, w.norm_weight.size),
      bytes_of(w.norm_bias.data, w.norm_bias.size),
      bytes_of(w.q_norm_weight.data, w.q_norm_weight.size),
      bytes_of(w.k_norm_weight.data, w.k_norm_weight.size),
      bytes_of(w.relative_attention_bias.data, w.relative_attention_bias.size),
      bytes_of(w.in_proj_weight_int8.data, w.in_proj_weight_int8.size),
      bytes_of(w.in_proj_weight_scale.data, w.in_proj_weight_scale.size),
      bytes_of(w.q_proj_weight_int8.data, w.q_proj_weight_int8.size),
      bytes_of(w.q_proj_weight_scale.data, w.q_proj_weight_scale.size),
      bytes_of(w.k_proj_weight_int8.data, w.k_proj_weight_int8.size),
      bytes_of(w.k_proj_weight_scale.data, w.k_proj_weight_scale.size),
      bytes_of(w.v_proj_weight_int8.data, w.v_proj_weight_int8.size),
      bytes_of(w.v_proj_weight_scale.data, w.v_proj_weight_scale.size),
      bytes_of(w.out_proj_weight_int8.data, w.out_proj_weight_int8.size),
      bytes_of(w.out_proj_weight_scale.data, w.out_proj_weight_scale.size),
      bytes_of(static_cast<const unsigned char*>(arena.base()), arena.capacity()),
  };
  const Bytes y = bytes_of(out.data, n.out);
  const Bytes p = bytes_of(o.attn_weights.data, n.attn_weights);
  // The cache's rows (float or int8) and an int8 cache's scales: written by an appending call.
  const std::size_t rows = cache ? cache->batch * cache->capacity * 2 : 0;
  const Bytes c = !cache        ? Bytes{0, 0}
                  : cache->data8 ? bytes_of(cache->data8, rows * d.kv_dim())
                                 : bytes_of(cache->data, rows * d.kv_dim());
  const Bytes cs = cache && cache->scales ? bytes_of(cache->scales, rows * d.kv_heads) : Bytes{0, 0};
  if (overlap(y, p) || overlap(y, c) || overlap(p, c) || overlap(y, cs) || overlap(p, cs)) return Status::overlap;
  for (const Bytes& r : reads)
    if (overlap(y, r) || overlap(p, r) || overlap(c, r) || overlap(cs, r)) return Status::overlap;
  return Status::ok;
}

// Cross-attention over a cache's static K/V: no positions (self-attention's), every sequence
// holds keys, and shape.seq_kv is the most any holds.
Status check_static_kv(const MhaDims& d, const AttentionShape& sh, const KvCacheView& c) noexcept {
  if (d.position != Position::none || d.window) return Status::invalid_argument;
  if (sh.batch > c.batch) return Status::too_long;
  std::size_t most = 0;
  for (std::size_t b = 0; b < sh.batch; ++b) {
    const std::size_t keys = c.held(b);
    if (keys == 0) return Status::invalid_argument;
    most = keys > most ? keys : most;
  }
  return sh.seq_kv == most ? Status::ok : Status::invalid_argument;
}

// A call with a cache: its sequences fit (a rolling cache after its roll; RoPE's positions in its
// table), and shape.seq_kv is the keys its masks are laid over.
Status check_cache(const MhaDims& d, const AttentionShape& sh, const KvCacheView& c) noexcept {
  if (c.use == KvUse::read) return check_static_kv(d, sh, c);
  if (sh.batch > c.batch) return Status::too_long;
  const std::size_t positions = d.max_positions();  // RoPE's table (a rolling cache's limit)
  std::size_t most = 0;
  for (std::size_t b = 0; b < sh.batch; ++b) {
    const std::size_t kept = kv_rows_kept(c.held(b), sh.seq_q, c.capacity, c.window);
    if (sh.seq_q > c.capacity - kept) return Status::too_long;
    if (d.position == Position::rope && (c.lengths[b] > positions || sh.seq_q > positions - c.lengths[b]))
      return Status::too_long;
    most = kept + sh.seq_q > most ? kept + sh.seq_q : most;
  }
  return sh.seq_kv == most ? Status::ok : Status::invalid_argument;
}

// project_kv: key and value of S_kv rows for B sequences into a cache that is not rolling.
Status check_fill(const MhaDims& d, const MhaWeights& w, const ArenaRef& arena, const AttentionShape& sh,
                  const Span<const float>& k, const Span<const float>& v, const KvCacheView& c) noexcept {
  if (sh.seq_kv == 0 || sh.batch == 0 || !valid(sh.layout) || c.window) return Status::invalid_argument;
  if (sh.batch > c.batch || sh.seq_kv > c.capacity) return Status::too_long;
  Elements n{};
  n.query = n.key = sh.batch * sh.seq_kv * d.kdim;
  n.value = sh.batch * sh.seq_kv * d.vdim;
  EMHA_TRY(check_span(k, n.key));
  EMHA_TRY(check_span(v, n.value));
  EMHA_TRY(check_no_overlap(d, w, arena, sh, k, k, v, Span<float>{}, ForwardOptions{}, n, &c));
  return arena.available() < mha_arena_bytes(d) ? Status::no_space : Status::ok;
}

}  // namespace

Status mha_check_call(const MhaDims& d, const MhaWeights& w, const ArenaRef& arena,
                      const AttentionShape& sh, const Span<const float>& q,
                      const Span<const float>& k, const Span<const float>& v,
                      const Span<float>& out, const ForwardOptions& o,
                      const KvCacheView* cache) noexcept {
  if (cache && cache->use == KvUse::fill) return check_fill(d, w, arena, sh, k, v, *cache);
  if (sh.seq_q == 0 || sh.seq_kv == 0 || sh.batch == 0) return Status::invalid_argument;
  if (!valid(sh.layout)) return Status::invalid_argument;
  if (cache) EMHA_TRY(check_cache(d, sh, *cache));
  if (sh.seq_q > d.max_seq_q || sh.seq_kv > d.max_seq_kv || sh.batch > d.max_batch)
    return Status::too_long;
  if (!std::isfinite(o.scale)) return Status::invalid_argument;
  const Elements n = elements(d, sh, o, kv_rows_projected(sh, cache));
  EMHA_TRY(check_span(q, n.query));
  EMHA_TRY(check_span(k, n.key));
  EMHA_TRY(check_span(v, n.value));
  EMHA_TRY(check_span(out, n.out));
  EMHA_TRY(check_optional(o.attn_weights, n.attn_weights));
  EMHA_TRY(check_masks(sh, o.masks, n));
  if (o.attn_weights.data && !d.weights) return Status::invalid_argument;
  if (!cache) EMHA_TRY(check_positions(d, sh, q, k, v));
  EMHA_TRY(check_no_overlap(d, w, arena, sh, q, k, v, out, o, n, cache));
  if (arena.available() < mha_arena_bytes(d)) return Status::no_space;
  return Status::ok;
}

Status mha_check_weights(const MhaDims& d, const MhaWeights& w) noexcept {
  const bool packed_in = d.same_embed_dim();  // in_proj_weight, else q/k/v_proj_weight
  EMHA_TRY(check_projection(d, packed_in, w.in_proj_weight, w.in_proj_weight_int8, w.in_proj_weight_scale,
                            d.qkv_dim(), d.d_model));
  EMHA_TRY(check_projection(d, !packed_in, w.q_proj_weight, w.q_proj_weight_int8, w.q_proj_weight_scale, d.q_dim(),
                            d.d_model));
  EMHA_TRY(check_projection(d, !packed_in, w.k_proj_weight, w.k_proj_weight_int8, w.k_proj_weight_scale, d.kv_dim(),
                            d.kdim));
  EMHA_TRY(check_projection(d, !packed_in, w.v_proj_weight, w.v_proj_weight_int8, w.v_proj_weight_scale, d.kv_dim(),
                            d.vdim));
  EMHA_TRY(check_projection(d, true, w.out_proj_weight, w.out_proj_weight_int8, w.out_proj_weight_scale, d.d_model,
                            d.q_dim()));
  EMHA_TRY(d.in_bias_floats() ? check_weight(w.in_proj_bias, d.in_bias_floats()) : check_unused(w.in_proj_bias));
  EMHA_TRY(d.bias[3] ? check_weight(w.out_proj_bias, d.d_model) : check_unused(w.out_proj_bias));
  const bool gamma = d.norm != NormPlacement::none && d.norm_affine;
  const bool beta = gamma && d.norm_kind == NormKind::layer_norm;
  EMHA_TRY(gamma ? check_weight(w.norm_weight, d.norm_dim()) : check_unused(w.norm_weight));
  EMHA_TRY(beta ? check_weight(w.norm_bias, d.norm_dim()) : check_unused(w.norm_bias));
  const bool qk = d.qk_norm != QkNorm::none;
  EMHA_TRY(qk ? check_weight(w.q_norm_weight, d.q_norm_dim()) : check_unused(w.q_norm_weight));
  EMHA_TRY(qk ? check_weight(w.k_norm_weight, d.k_norm_dim()) : check_unused(w.k_norm_weight));
  return d.position == Position::relative_bias
             ? check_weight(w.relative_attention_bias, d.relative_buckets * d.heads)
             : check_unused(w.relative_attention_bias);
}

}  // namespace emha::detail

// Input validation of MultiHeadAttention: everything is checked before the first write, so an
// error leaves the caller's outputs untouched.

#include <cmath>

#include "attention/mha_validate.hpp"
#include "attention/return_on_error.hpp"

namespace emha::detail {
namespace {

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

std::size_t mask_elements(const MhaDims& d, const AttentionShape& sh, MaskShape m) noexcept {
  const std::size_t block = sh.seq_q * sh.seq_kv;
  switch (m) {
    case MaskShape::shared: return block;
    case MaskShape::per_head: return d.heads * block;
    case MaskShape::per_batch_head: return sh.batch * d.heads * block;
  }
  return block;
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

}  // namespace

Status mha_check_call(const MhaDims& d, const ArenaRef& arena, const AttentionShape& sh,
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
  if (o.attn_weights.data && !d.weights) return Status::invalid_argument;
  if (arena.available() < mha_arena_bytes(d)) return Status::no_space;
  return Status::ok;
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

}  // namespace emha::detail

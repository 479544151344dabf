// SPDX-License-Identifier: Apache-2.0
// Input validation of the integer layers (emha/attention/mha_s8.hpp, mha_s16x8.hpp): everything is checked
// before the first write, so an error leaves the caller's outputs untouched. The rules for
// spans: span_checks.hpp; the masks' shapes are the float layer's (mha_validate.cpp).

#include <cstdint>

#include "attention/mha_s8_validate.hpp"
#include "attention/return_on_error.hpp"
#include "attention/span_checks.hpp"

namespace emha::detail {
namespace {

bool zero_point(std::int32_t z) noexcept { return z >= INT8_MIN && z <= INT8_MAX; }

bool multiplier(const QuantizedMultiplier& q) noexcept {
  const bool m = q.multiplier == 0 || (q.multiplier >= (std::int32_t(1) << 30));  // Q31 in [0.5, 1)
  return m && q.shift >= -31 && q.shift <= 30;
}

Status check_projection(const ProjectionS8& p, std::size_t rows, std::size_t cols) noexcept {
  EMHA_TRY(check_weight(p.weight, rows * cols));
  EMHA_TRY(check_weight(p.bias, rows));
  EMHA_TRY(check_weight(p.multiplier, rows));
  for (std::size_t i = 0; i < rows * cols; ++i)
    if (p.weight.data[i] == INT8_MIN) return Status::invalid_argument;  // symmetric: [-127, 127]
  for (std::size_t j = 0; j < rows; ++j)
    if (!multiplier(p.multiplier.data[j])) return Status::invalid_argument;
  return Status::ok;
}

// A multiplier of TFLite's int64 requantization (requantize_s64): shift in [-31, 7].
bool multiplier_s64(const QuantizedMultiplier& q) noexcept { return multiplier(q) && q.shift <= 7; }

Status check_projection(const ProjectionS16x8& p, std::size_t rows, std::size_t cols) noexcept {
  EMHA_TRY(check_weight(p.weight, rows * cols));
  if (given(p.bias)) EMHA_TRY(check_weight(p.bias, rows));
  EMHA_TRY(check_weight(p.multiplier, rows));
  for (std::size_t i = 0; i < rows * cols; ++i)
    if (p.weight.data[i] == INT8_MIN) return Status::invalid_argument;  // symmetric: [-127, 127]
  constexpr std::int64_t bias_limit = std::int64_t(1) << 46;  // with the sums, |x| < 2^47
  for (std::size_t j = 0; given(p.bias) && j < rows; ++j)
    if (p.bias.data[j] >= bias_limit || p.bias.data[j] <= -bias_limit) return Status::invalid_argument;
  for (std::size_t j = 0; j < rows; ++j)
    if (!multiplier_s64(p.multiplier.data[j])) return Status::invalid_argument;
  return Status::ok;
}

template <class P>
Bytes bytes_of_span(Span<const P> s) noexcept {
  return bytes_of(s.data, s.size);
}

// The call checks of both layers: T the activations' type, W the weights, O the options.
template <class T, class W, class O>
Status check_call(const MhaDims& d, const W& w, const ArenaRef& arena, const AttentionShape& sh, Span<const T> q,
                  Span<const T> k, Span<const T> v, Span<T> out, const O& o, std::size_t arena_bytes) noexcept {
  if (sh.seq_q == 0 || sh.seq_kv == 0 || sh.batch == 0) return Status::invalid_argument;
  if (sh.layout != Layout::batch_first && sh.layout != Layout::seq_first) return Status::invalid_argument;
  if (sh.seq_q > d.max_seq_q || sh.seq_kv > d.max_seq_kv || sh.batch > d.max_batch) return Status::too_long;
  const AttentionMasks& m = o.masks;
  const MaskShape shape = m.attn_mask_shape;
  if (shape != MaskShape::shared && shape != MaskShape::per_head && shape != MaskShape::per_batch_head)
    return Status::invalid_argument;
  if (given(m.attn_additive) || given(m.score_bias)) return Status::invalid_argument;  // float masks
  const std::size_t n_q = sh.batch * sh.seq_q * d.d_model, n_k = sh.batch * sh.seq_kv * d.kdim,
                    n_v = sh.batch * sh.seq_kv * d.vdim, n_p = sh.batch * d.heads * sh.seq_q * sh.seq_kv,
                    n_mask = mask_elements(d, sh, shape), n_attend = m.attend_rows * sh.seq_kv * m.attend_batch;
  EMHA_TRY(check_span(q, n_q));
  EMHA_TRY(check_span(k, n_k));
  EMHA_TRY(check_span(v, n_v));
  EMHA_TRY(check_span(out, n_q));
  EMHA_TRY(check_optional(o.attn_weights, n_p));
  EMHA_TRY(check_optional(m.key_ignored, sh.batch * sh.seq_kv));
  EMHA_TRY(check_optional(m.key_lengths, sh.batch));
  for (std::size_t b = 0; m.key_lengths.data && b < sh.batch; ++b)
    if (m.key_lengths.data[b] > sh.seq_kv) return Status::invalid_argument;
  EMHA_TRY(check_optional(m.attn_masked, n_mask));
  if (given(m.attend)) {  // labml: [S_q or 1, S_kv, B or 1]
    if (m.attend_rows != 1 && m.attend_rows != sh.seq_q) return Status::invalid_argument;
    if (m.attend_batch != 1 && m.attend_batch != sh.batch) return Status::invalid_argument;
    EMHA_TRY(check_span(m.attend, n_attend));
  }
  // The outputs share no byte with anything forward() reads, each other or the arena, and nothing
  // forward() reads lies in the arena.
  const Bytes reads[] = {
      bytes_of(q.data, n_q), bytes_of(k.data, n_k), bytes_of(v.data, n_v),
      bytes_of(m.key_ignored.data, sh.batch * sh.seq_kv), bytes_of(m.key_lengths.data, sh.batch),
      bytes_of(m.attn_masked.data, n_mask), bytes_of(m.attend.data, n_attend),
      bytes_of_span(w.q.weight), bytes_of_span(w.q.bias), bytes_of_span(w.q.multiplier),
      bytes_of_span(w.k.weight), bytes_of_span(w.k.bias), bytes_of_span(w.k.multiplier),
      bytes_of_span(w.v.weight), bytes_of_span(w.v.bias), bytes_of_span(w.v.multiplier),
      bytes_of_span(w.out.weight), bytes_of_span(w.out.bias), bytes_of_span(w.out.multiplier),
      bytes_of(static_cast<const unsigned char*>(arena.base()), arena.capacity()),
  };
  const Bytes y = bytes_of(out.data, n_q), p = bytes_of(o.attn_weights.data, n_p);
  if (overlap(y, p)) return Status::overlap;
  const Bytes& scratch = reads[sizeof reads / sizeof reads[0] - 1];  // the pass writes it while reading the rest
  for (const Bytes& r : reads)
    if (overlap(y, r) || overlap(p, r) || (&r != &scratch && overlap(scratch, r))) return Status::overlap;
  return arena.available() < arena_bytes ? Status::no_space : Status::ok;
}

}  // namespace

Status mha_s8_check_weights(const MhaDims& d, const MhaS8Weights& w) noexcept {
  EMHA_TRY(check_projection(w.q, d.q_dim(), d.d_model));
  EMHA_TRY(check_projection(w.k, d.kv_dim(), d.kdim));
  EMHA_TRY(check_projection(w.v, d.kv_dim(), d.vdim));
  EMHA_TRY(check_projection(w.out, d.d_model, d.q_dim()));
  for (std::int32_t z : {w.zero_point_query, w.zero_point_key, w.zero_point_value, w.zero_point_q, w.zero_point_k,
                         w.zero_point_v, w.zero_point_scores, w.zero_point_context, w.zero_point_out})
    if (!zero_point(z)) return Status::invalid_argument;
  if (!multiplier(w.scores) || !multiplier(w.context)) return Status::invalid_argument;
  const SoftmaxS8Params& s = w.softmax;
  const bool softmax = s.input_multiplier >= (std::int32_t(1) << 30) && s.input_left_shift >= 0 &&
                       s.input_left_shift <= 31 && s.diff_min <= 0;
  return softmax ? Status::ok : Status::invalid_argument;
}

Status mha_s8_check_call(const MhaDims& d, const MhaS8Weights& w, const ArenaRef& arena, const AttentionShape& sh,
                         Span<const std::int8_t> q, Span<const std::int8_t> k, Span<const std::int8_t> v,
                         Span<std::int8_t> out, const ForwardOptionsS8& o) noexcept {
  return check_call(d, w, arena, sh, q, k, v, out, o, mha_s8_arena_bytes(d));
}

Status mha_s16x8_check_weights(const MhaDims& d, const MhaS16x8Weights& w) noexcept {
  EMHA_TRY(check_projection(w.q, d.q_dim(), d.d_model));
  EMHA_TRY(check_projection(w.k, d.kv_dim(), d.kdim));
  EMHA_TRY(check_projection(w.v, d.kv_dim(), d.vdim));
  EMHA_TRY(check_projection(w.out, d.d_model, d.q_dim()));
  const bool ok = multiplier_s64(w.scores) && multiplier_s64(w.context) && multiplier(w.softmax.input);
  return ok ? Status::ok : Status::invalid_argument;
}

Status mha_s16x8_check_call(const MhaDims& d, const MhaS16x8Weights& w, const ArenaRef& arena,
                            const AttentionShape& sh, Span<const std::int16_t> q, Span<const std::int16_t> k,
                            Span<const std::int16_t> v, Span<std::int16_t> out,
                            const ForwardOptionsS16x8& o) noexcept {
  return check_call(d, w, arena, sh, q, k, v, out, o, mha_s16x8_arena_bytes(d));
}

}  // namespace emha::detail

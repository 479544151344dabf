// SPDX-License-Identifier: Apache-2.0
#pragma once
// Weights and run-time options of the full-integer layer (emha/attention/mha_s8.hpp). Every value
// is computed offline from the float module and a calibration run (tests/attention/
// gen_s8_fixtures.py shows how), so that the device stores no float: the scales live only in the
// ratios the multipliers encode.

#include <cstdint>

#include "emha/attention/options.hpp"
#include "emha/kernels/requant.hpp"
#include "emha/kernels/softmax_s8_ref.hpp"
#include "emha/span.hpp"

namespace emha {

// One FULLY_CONNECTED: y[j] = zero_point_y + requantize(sum_p x[p] w[j][p] + bias[j], multiplier[j]),
// saturated to int8. `bias` has the input's zero point folded in:
//   bias[j] = round(b[j] / (s_x s_w[j])) - zero_point_x * sum_p w[j][p]
// (TFLite's sum_p (x[p] - zero_point_x) w[j][p] + its int32 bias, exactly: the sums are int32),
// so a projection without a bias still has one. multiplier[j] encodes s_x s_w[j] / s_y.
struct ProjectionS8 {
  Span<const std::int8_t> weight;              // [rows, in]: PyTorch's [out, in], in [-127, 127]
  Span<const std::int32_t> bias;               // [rows]
  Span<const QuantizedMultiplier> multiplier;  // [rows]
};

// The layer's int8 tensors are each (scale s, zero point z): real = s (q - z). The zero points
// are stored; the scales appear only in the multipliers.
struct MhaS8Weights {
  ProjectionS8 q;    // [q_dim, d_model]   query -> Q
  ProjectionS8 k;    // [kv_dim, kdim]     key -> K
  ProjectionS8 v;    // [kv_dim, vdim]     value -> V
  ProjectionS8 out;  // [d_model, q_dim]   context -> out
  // Zero points of the layer's inputs (the same three for self-attention), of Q, K and V, of the
  // scores, of the context and of the output; each in [-128, 127]. The probabilities' is -128.
  std::int32_t zero_point_query = 0, zero_point_key = 0, zero_point_value = 0;
  std::int32_t zero_point_q = 0, zero_point_k = 0, zero_point_v = 0;
  std::int32_t zero_point_scores = 0, zero_point_context = 0, zero_point_out = 0;
  // Q K^T to the scores: s_Q s_K scale / s_scores (the score scale, 1/sqrt(head_dim) or the
  // Config's, folded in as TFLite converters fold a MUL by a constant).
  QuantizedMultiplier scores{};
  SoftmaxS8Params softmax{};  // from s_scores (beta 1): TFLite's PreprocessSoftmaxScaling
  QuantizedMultiplier context{};  // P V to the context: s_V / (256 s_context)
};

struct ForwardOptionsS8 {
  // As the float layer's; attn_additive and score_bias (float) are not taken.
  AttentionMasks masks{};
  // Optional: each head's int8 probabilities [batch, heads, seq_q, seq_kv] (p = (q + 128) / 256).
  Span<std::int8_t> attn_weights{};
};

}  // namespace emha

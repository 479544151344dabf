// SPDX-License-Identifier: Apache-2.0
#pragma once
// Weights and run-time options of the 16x8 layer (emha/attention/mha_s16x8.hpp). As for s8,
// every value is computed offline from the float module and a calibration run
// (tests/attention/gen_s16x8_fixtures.py shows how); the device stores no float. Every int16
// tensor is symmetric, real = s q with zero point 0, so no zero point is stored.

#include <cstdint>

#include "emha/attention/options.hpp"
#include "emha/kernels/requant.hpp"
#include "emha/kernels/softmax_s16.hpp"
#include "emha/span.hpp"

namespace emha {

// One 16x8 FULLY_CONNECTED: y[j] = requantize_s64(sum_p x[p] w[j][p] + bias[j], multiplier[j]),
// saturated to int16, with bias[j] = round(b[j] / (s_x s_w[j])) (int64) and multiplier[j]
// encoding s_x s_w[j] / s_y (shift in [-31, 7]: TFLite's int64 requantization).
struct ProjectionS16x8 {
  Span<const std::int8_t> weight;              // [rows, in]: PyTorch's [out, in], in [-127, 127]
  Span<const std::int64_t> bias;               // [rows], each |bias| < 2^46; empty: no bias
  Span<const QuantizedMultiplier> multiplier;  // [rows]
};

struct MhaS16x8Weights {
  ProjectionS16x8 q;    // [q_dim, d_model]   query -> Q
  ProjectionS16x8 k;    // [kv_dim, kdim]     key -> K
  ProjectionS16x8 v;    // [kv_dim, vdim]     value -> V
  ProjectionS16x8 out;  // [d_model, q_dim]   context -> out
  // Q K^T to the scores: s_Q s_K scale / s_scores (the score scale folded in); shift in [-31, 7].
  QuantizedMultiplier scores{};
  SoftmaxS16Params softmax{};     // from s_scores (beta 1)
  QuantizedMultiplier context{};  // P V to the context: s_V / (32768 s_context); shift in [-31, 7]
};

struct ForwardOptionsS16x8 {
  // As the float layer's; attn_additive and score_bias (float) are not taken.
  AttentionMasks masks{};
  // Optional: each head's int16 probabilities [batch, heads, seq_q, seq_kv] (p = q / 32768).
  Span<std::int16_t> attn_weights{};
};

}  // namespace emha

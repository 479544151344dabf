// SPDX-License-Identifier: Apache-2.0
#pragma once
// Run-time arguments of MultiHeadAttention::forward: shapes, weights, masks and options.

#include <cstddef>
#include <cstdint>

#include "emha/span.hpp"

namespace emha {

// Layout of query, key, value and output.
enum class Layout : std::uint8_t {
  batch_first,  // [batch, seq, dim]
  seq_first,    // [seq, batch, dim]: PyTorch's default (batch_first=False)
};

struct AttentionShape {
  std::size_t seq_q = 0;   // query rows per sequence, 1..Config::max_seq_q
  std::size_t seq_kv = 0;  // key/value rows per sequence, 1..Config::max_seq_kv
  std::size_t batch = 1;   // 1..Config::max_batch
  Layout layout = Layout::batch_first;
};

// Weights exactly in torch.nn.MultiheadAttention's layout (state_dict names), row-major, read
// in place (const; may sit in flash). Each span must hold exactly the stated element count.
// Q is q_dim = heads * head_dim wide (d_model unless Config::head_dim says otherwise); with
// GQA/MQA (Config::kv_heads < heads) K and V are kv_dim = kv_heads * head_dim wide (HF Llama's
// k_proj / v_proj); kv_dim = q_dim otherwise.
struct MhaWeights {
  Span<const float> in_proj_weight;   // [q_dim + 2*kv_dim, d_model] when kdim == vdim == d_model:
                                      // rows W_q | W_k | W_v (nn.MultiheadAttention: [3*d_model, d_model])
  Span<const float> q_proj_weight;    // [q_dim, d_model]       when kdim or vdim != d_model
  Span<const float> k_proj_weight;    // [kv_dim, kdim]
  Span<const float> v_proj_weight;    // [kv_dim, vdim]
  Span<const float> in_proj_bias;     // the biases of those of Q [q_dim], K [kv_dim], V [kv_dim]
                                      // that have one (Config::bias, projection_bias), in that
                                      // order; 3*d_model for nn.MultiheadAttention
  Span<const float> out_proj_weight;  // [d_model, q_dim]
  Span<const float> out_proj_bias;    // [d_model]              when the output projection has one
  Span<const float> norm_weight;      // [d_model] with Config::norm and norm_affine: LayerNorm or
                                      // RMSNorm weight (layer_norm.weight, inner_attn_ln.weight);
                                      // [q_dim] for sub-LN (it normalizes the heads' outputs)
  Span<const float> norm_bias;        // the same size, with a LayerNorm and norm_affine (.bias)
  Span<const float> q_norm_weight;    // Config::qk_norm: [head_dim] per_head, [q_dim] whole
  Span<const float> k_norm_weight;    //                  [head_dim] per_head, [kv_dim] whole
  // Position::relative_bias: [relative_buckets, heads], T5's relative_attention_bias.weight.
  Span<const float> relative_attention_bias;
  // Config::weight_type == WeightType::int8: each projection's weight as int8 in [-127, 127]
  // (the same shape and layout as its float span above, which stays empty) and its per-row
  // float scale [rows]: the weight is w[j][p] * scale[j].
  Span<const std::int8_t> in_proj_weight_int8;   // [q_dim + 2*kv_dim, d_model]
  Span<const float> in_proj_weight_scale;        // [q_dim + 2*kv_dim]
  Span<const std::int8_t> q_proj_weight_int8;    // [q_dim, d_model]
  Span<const float> q_proj_weight_scale;         // [q_dim]
  Span<const std::int8_t> k_proj_weight_int8;    // [kv_dim, kdim]
  Span<const float> k_proj_weight_scale;         // [kv_dim]
  Span<const std::int8_t> v_proj_weight_int8;    // [kv_dim, vdim]
  Span<const float> v_proj_weight_scale;         // [kv_dim]
  Span<const std::int8_t> out_proj_weight_int8;  // [d_model, q_dim]
  Span<const float> out_proj_weight_scale;       // [d_model]
};

// Layout of an attention mask (bool or additive); PyTorch's 2-D and 3-D attn_mask are
// `shared` and `per_batch_head`.
enum class MaskShape : std::uint8_t {
  shared,          // [seq_q, seq_kv], every batch and head
  per_head,        // [heads, seq_q, seq_kv], every batch
  per_batch_head,  // [batch * heads, seq_q, seq_kv]
};

// Any combination may be given; a key is excluded if any mask excludes it. A query row whose
// every key is excluded gets zero attention: its output is out_proj.bias (never NaN).
struct AttentionMasks {
  bool causal = false;             // key j excluded for query i when j > i + causal_offset
  std::size_t causal_offset = 0;   // position of query 0 among the keys (S_kv - S_q after a cache)
  Span<const bool> key_ignored;    // [batch, seq_kv], true = ignore this key (PyTorch key_padding_mask)
  Span<const std::size_t> key_lengths;  // [batch]: keys at or past length are ignored
  Span<const bool> attn_masked;    // true = masked (PyTorch bool attn_mask), shape attn_mask_shape
  Span<const float> attn_additive; // added to the scaled scores (PyTorch float attn_mask)
  MaskShape attn_mask_shape = MaskShape::shared;
  // labml's mask: [attend_rows, seq_kv, attend_batch], true = attend (labml's mask == 0 is
  // masked); attend_rows is seq_q or 1, attend_batch is batch or 1 (broadcast over what is 1).
  Span<const bool> attend;
  std::size_t attend_rows = 1, attend_batch = 1;
  // A bias added to the scaled scores after every mask: torchscale's rel_pos ([batch * heads,
  // seq_q, seq_kv] = per_batch_head), or what a get_scores override would add (labml).
  Span<const float> score_bias;
  MaskShape score_bias_shape = MaskShape::per_batch_head;
};

struct ForwardOptions {
  AttentionMasks masks{};
  // Optional softmax probabilities (PyTorch need_weights): [batch, seq_q, seq_kv] averaged over
  // heads, or [batch, heads, seq_q, seq_kv] when average_attn_weights is false. Empty = none.
  Span<float> attn_weights{};
  bool average_attn_weights = true;
  float scale = 0.0f;  // scores are scaled by this; 0 means Config::scale (1/sqrt(head_dim))
};

}  // namespace emha

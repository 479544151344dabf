// SPDX-License-Identifier: Apache-2.0
#pragma once
// Compile-time configuration of a MultiHeadAttention. Derive from MhaConfig and shadow any
// member to change it; members added in later versions come with defaults, so a config written
// today keeps compiling:
//
//   struct Encoder : emha::MhaConfig</*d_model*/ 64, /*heads*/ 4, /*max_seq_q*/ 32> {
//     static constexpr std::size_t max_batch = 2;
//   };

#include <cstddef>

#include "emha/kernels/requant.hpp"
#include "emha/kernels/rope.hpp"

namespace emha {

// Position information applied inside the layer (self-attention only). Sinusoidal encodings are
// added to the input by the caller (emha/kernels/sinusoidal.hpp): they are not part of attention.
enum class Position : unsigned char {
  none,
  rope,   // rotary, on projected Q and K (rope_pairing, rope_dims, rope_base); HF's float32 angles
  xpos,   // torchscale's xPos: interleaved rotary scaled by zeta^(p / xpos_scale_base), keys inverse
  alibi,  // -slope_h * |i - j| added to the scaled scores, slopes as the ALiBi reference get_slopes
  // T5's relative position bias: weights.relative_attention_bias[bucket(j - i)][h] added to the
  // scaled scores (HF T5's _relative_position_bucket: relative_buckets, relative_max_distance,
  // relative_bidirectional; emha/kernels/relative_bias.hpp). Positions are absolute with a cache.
  relative_bias,
};

// RMSNorm of the projected Q and K (after the projections' bias, before RoPE), weights
// q_norm_weight and k_norm_weight, eps qk_norm_eps. V is not normalized.
enum class QkNorm : unsigned char {
  none,
  per_head,  // over each head's head_dim floats (Qwen3, Gemma 3), weights [head_dim]
  whole,     // over the whole Q row [heads * head_dim] and K row [kv_heads * head_dim] (OLMo-2)
};

// How the projected [S, heads * head_dim] rows are cut into heads.
enum class HeadSplit : unsigned char {
  columns,    // head h is columns h * head_dim .. (h + 1) * head_dim: every library's split
  // A widely copied blog block's `.view(batch * heads, -1, d_k)` with no transpose: per sequence,
  // head h is the h-th block of S * head_dim consecutive floats of the [S, heads * head_dim]
  // buffer read as [S, head_dim], and the heads' contexts [heads, S, head_dim] are read back the
  // same way as [S, heads * head_dim]. Weights trained with that code need it. No positions and
  // no KvCache with it (the view mixes positions).
  flat_view,
};

// Where the layer's one normalization goes (x is the query input):
enum class NormPlacement : unsigned char {
  none,  // out = MHA(x)
  post,  // out = Norm(x + MHA(x))           post-LN: original Transformer, the blog encoder block
  pre,   // out = x + MHA(Norm(x))           pre-LN: key and value are Norm(x) too when they are x
  sub,   // out = out_proj(Norm(heads(x)))   sub-LN: torchscale's inner_attn_ln, before out_proj
};

enum class NormKind : unsigned char {
  layer_norm,  // torch.nn.LayerNorm: weight and bias (norm_affine)
  rms_norm,    // HF LlamaRMSNorm / torch.nn.RMSNorm: weight (norm_affine)
};

// The element type of the four projections' weights (norms, biases and tables stay float).
enum class WeightType : unsigned char {
  f32,   // float, as PyTorch stores them
  // int8 per output channel (a row of PyTorch's [out, in]), symmetric, zero point 0, in
  // [-127, 127], with one float scale per row: the layer computes what
  // F.linear(x, w_int8.float() * scale[:, None], b) does (torchao's int8_weight_only), with
  // activations in float (W8A32). MhaWeights' *_int8 and *_scale spans replace the float ones.
  int8,
};

// The element type of a KvCache<Config>'s keys and values.
enum class KvType : unsigned char {
  f32,   // float
  // int8, symmetric, one float scale per (position, K/V head): scale = amax / 127 over the row's
  // d_k values, q = round(x / scale) (emha/kernels/quant.hpp; ExecuTorch's QuantizedKVCache keeps
  // a scale per token and head too). Each key tile is dequantized as attention reads it, so a
  // step reads about a quarter of the cache's float bytes; the new tokens' K and V are quantized
  // as they are appended, before any query reads them.
  int8,
};

// What the layer computes in.
enum class Arithmetic : unsigned char {
  f32,  // float activations (weights per weight_type): forward() takes and returns float
  // TFLite's full-integer int8 (emha/attention/mha_s8.hpp): forward() takes and returns int8;
  // every stage's output is int8 with a scale and zero point, the weights int8 per output channel,
  // requantization in fixed point (Config::rounding), softmax int8 (scale 1/256, zero point -128).
  // Projections, heads, head_dim, GQA and masks; no positions, norms, QK-norm, window or KvCache.
  s8,
  // TFLite's 16x8 (emha/attention/mha_s16x8.hpp): int16 activations with zero point 0, int8
  // weights per output channel, int64 sums and biases, softmax int16 (scale 1/32768): about 3x
  // less error than s8, most where rows are long (bench/README.md). What s8 has, nothing more.
  s16x8,
};

// Which projections have a bias, on top of `bias` (a projection has one when both say so). labml's
// annotated MHA with bias=False is {false, false, true, true}: its V and output layers always have one.
struct ProjectionBias {
  bool q = true, k = true, v = true, out = true;
};

template <std::size_t DModel, std::size_t Heads, std::size_t MaxSeqQ, std::size_t MaxSeqKv = MaxSeqQ>
struct MhaConfig {
  static constexpr std::size_t d_model = DModel;      // embedding width of query and output
  static constexpr std::size_t heads = Heads;
  // Width of a head (d_k); 0: d_model / heads. Q is heads * head_dim wide, K and V kv_heads *
  // head_dim, and out_proj maps heads * head_dim back to d_model (Gemma, Qwen3, T5's d_kv).
  static constexpr std::size_t head_dim = 0;
  // Scores are scaled by this; 0: 1 / sqrt(head_dim). T5: 1; Gemma 2/3: query_pre_attn_scalar^-0.5.
  // A nonzero ForwardOptions::scale overrides it for one call.
  static constexpr float scale = 0.0f;
  // Key/value heads (GQA; 1 is MQA): query head h reads K/V head h / (heads / kv_heads), as
  // PyTorch's repeat_interleave and HF's repeat_kv do. K and V are [kv_heads * d_k] wide.
  static constexpr std::size_t kv_heads = Heads;
  static constexpr std::size_t max_seq_q = MaxSeqQ;   // longest query sequence forward() accepts
  static constexpr std::size_t max_seq_kv = MaxSeqKv; // longest key/value sequence
  static constexpr std::size_t kdim = DModel;         // width of key inputs (PyTorch kdim)
  static constexpr std::size_t vdim = DModel;         // width of value inputs (PyTorch vdim)
  static constexpr std::size_t max_batch = 1;         // largest batch forward() accepts
  static constexpr bool bias = true;                  // in_proj_bias and out_proj.bias present
  // Copy the projection weights at set_weights() into the GEMM's panel layout (RAM of
  // MultiHeadAttention::packed_weight_bytes, inside the object): faster, since no call re-packs
  // them. Set false on a microcontroller to read the weights in place (e.g. from flash).
  static constexpr bool prepack_weights = true;
  // The projections' weights: float, or int8 with a float scale per output channel (WeightType).
  static constexpr WeightType weight_type = WeightType::f32;
  // Float or TFLite's full-integer int8 or 16x8 (Arithmetic); with s8 and s16x8, requantization
  // rounds as `rounding` says (TFLite's and CMSIS-NN's default double rounding, or single rounding).
  static constexpr Arithmetic arithmetic = Arithmetic::f32;
  static constexpr Rounding rounding = Rounding::double_rounding;
  // The keys and values of its KvCache: float, or int8 with a scale per position and K/V head
  // (KvType). int8 adds a dequantized K and V tile per task to the arena.
  static constexpr KvType kv_cache_type = KvType::f32;
  // forward() may be asked for the attention weights (PyTorch need_weights). That path holds one
  // head's [S_q x S_kv] scores; false leaves only the fused path, whose arena is linear in S_kv.
  static constexpr bool attention_weights = true;
  // Threads forward() may split its work over (emha::port::parallel_for; the posix port's
  // workers are started by the application: emha::port::start_workers). Each brings a scratch
  // slot of its own into the arena; 1 keeps forward() on the caller's thread. Results are
  // bit-identical for every value and every number of running workers.
  static constexpr std::size_t max_threads = 1;

  // Around attention; the defaults are torch.nn.MultiheadAttention.
  static constexpr ProjectionBias projection_bias{};
  static constexpr Position position = Position::none;
  static constexpr RopePairing rope_pairing = RopePairing::half;  // rope: HF rotate_half
  static constexpr std::size_t rope_dims = 0;        // rope: rotated dims per head; 0 = all head_dim
  static constexpr float rope_base = 10000.0f;       // rope: 500000 for Llama 3
  // rope: HF's rope_scaling (emha/kernels/rope.hpp), e.g. emha::rope_llama3(8, 1, 4, 8192) for
  // Llama 3.1 and 3.2; dynamic and longrope need max(max_seq_q, max_seq_kv) <= its
  // original_max_positions (past it transformers' angles depend on the call's length).
  static constexpr RopeScalingParams rope_scaling{};
  static constexpr float xpos_scale_base = 512.0f;   // xpos: torchscale's xpos_scale_base
  static constexpr std::size_t relative_buckets = 32;        // relative_bias: num_buckets
  static constexpr std::size_t relative_max_distance = 128;  // relative_bias: max_distance
  static constexpr bool relative_bidirectional = true;       // relative_bias: encoder; decoder false
  // Sliding-window attention (Mistral, Gemma): the query at position p attends keys p - W + 1 ..
  // p at most (W = sliding_window keys, its own included: HF eager's count; FA2's window_size
  // (W, W) keeps W + 1); 0: no window. The window's lower edge always applies, its upper edge is
  // the causal mask's. Self-attention only. A KvCache of capacity >= W rolls: it keeps the last
  // W - 1 positions when full, so its bytes depend on W, not on the sequence length.
  static constexpr std::size_t sliding_window = 0;
  // Gemma 2's attention logit soft-capping: each scaled score s becomes cap * tanh(s / cap) before
  // positions' biases and masks (50 in Gemma 2's configs); 0: none.
  static constexpr float attn_logit_softcapping = 0.0f;
  static constexpr NormPlacement norm = NormPlacement::none;
  static constexpr NormKind norm_kind = NormKind::layer_norm;
  static constexpr float norm_eps = 1e-5f;           // LayerNorm's default; HF Llama: 1e-6
  static constexpr bool norm_affine = true;          // false: elementwise_affine=False, no weights
  static constexpr QkNorm qk_norm = QkNorm::none;
  static constexpr float qk_norm_eps = 1e-6f;        // Qwen3, Gemma 3 rms_norm_eps; OLMo-2: 1e-5
  static constexpr bool qk_norm_unit_offset = false; // true: x_hat * (1 + w), Gemma's RMSNorm
  static constexpr HeadSplit head_split = HeadSplit::columns;
};

}  // namespace emha

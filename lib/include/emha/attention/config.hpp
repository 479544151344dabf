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

#include "emha/kernels/rope.hpp"

namespace emha {

// Position information applied inside the layer (self-attention only). Sinusoidal encodings are
// added to the input by the caller (emha/kernels/sinusoidal.hpp): they are not part of attention.
enum class Position : unsigned char {
  none,
  rope,   // rotary, on projected Q and K (rope_pairing, rope_dims, rope_base); HF's float32 angles
  xpos,   // torchscale's xPos: interleaved rotary scaled by zeta^(p / xpos_scale_base), keys inverse
  alibi,  // -slope_h * |i - j| added to the scaled scores, slopes as the ALiBi reference get_slopes
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

// Which projections have a bias, on top of `bias` (a projection has one when both say so). labml's
// annotated MHA with bias=False is {false, false, true, true}: its V and output layers always have one.
struct ProjectionBias {
  bool q = true, k = true, v = true, out = true;
};

template <std::size_t DModel, std::size_t Heads, std::size_t MaxSeqQ, std::size_t MaxSeqKv = MaxSeqQ>
struct MhaConfig {
  static constexpr std::size_t d_model = DModel;      // embedding width of query and output
  static constexpr std::size_t heads = Heads;         // d_k = d_model / heads
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
  static constexpr std::size_t rope_dims = 0;        // rope: rotated dims per head; 0 = all d_k
  static constexpr float rope_base = 10000.0f;       // rope: 500000 for Llama 3
  static constexpr float xpos_scale_base = 512.0f;   // xpos: torchscale's xpos_scale_base
  // Sliding-window attention (Mistral, Gemma): the query at position p attends keys p - W + 1 ..
  // p at most (W = sliding_window keys, its own included: HF eager's count; FA2's window_size
  // (W, W) keeps W + 1); 0: no window. The window's lower edge always applies, its upper edge is
  // the causal mask's. Self-attention only. A KvCache of capacity >= W rolls: it keeps the last
  // W - 1 positions when full, so its bytes depend on W, not on the sequence length.
  static constexpr std::size_t sliding_window = 0;
  static constexpr NormPlacement norm = NormPlacement::none;
  static constexpr NormKind norm_kind = NormKind::layer_norm;
  static constexpr float norm_eps = 1e-5f;           // LayerNorm's default; HF Llama: 1e-6
  static constexpr bool norm_affine = true;          // false: elementwise_affine=False, no weights
};

}  // namespace emha

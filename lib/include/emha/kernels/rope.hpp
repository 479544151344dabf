// SPDX-License-Identifier: Apache-2.0
#pragma once
// Rotary position embedding (RoPE) on projected query or key rows, from a table of angles the
// caller fills once (rope_table_f32) into storage it owns: [positions x d_rot/2] cos and sin.
//
// Angles exactly as Hugging Face computes them (modeling_rope_utils, modeling_llama): float32
// inv_freq[i] = 1 / base^(2i / d_rot), one float32 product angle = float(p) * inv_freq[i], float32
// cos and sin. Their float32 rounding grows with the position (the angle's ulp at p = 4096 is
// ~5e-4 rad): an implementation with double angles differs from HF by that much, emha does not.
//
// Pairings (the same weights with the wrong pairing give garbage, no error):
//   half         HF rotate_half, GPT-NeoX, Qwen2, Gemma: pairs (i, i + d_rot/2)
//   interleaved  Meta llama, GPT-J, torchscale's xPos, ggml's default mode: pairs (2i, 2i + 1)
// For pair (a, b) with angle i: a' = a cos_i - b sin_i, b' = b cos_i + a sin_i, each product
// rounded, then the difference or sum (HF's x * cos + rotate_half(x) * sin): no fused multiply-add.
// Partial rotary (GPT-NeoX rotary_pct, HF partial_rotary_factor, GPT-J rotary_dim): only dims
// [0, d_rot) of each head rotate, the rest pass through.

#include <cstddef>

#include "emha/status.hpp"

namespace emha {

enum class RopePairing : unsigned char { half, interleaved };

// The filled table: cos[p * d_rot/2 + i], sin[p * d_rot/2 + i] for p < positions, i < d_rot/2.
struct RopeTable {
  const float* cos;
  const float* sin;
  std::size_t positions;
  std::size_t d_rot;
};

// Floats of one of the table's two arrays.
constexpr std::size_t rope_table_floats(std::size_t positions, std::size_t d_rot) noexcept {
  return positions * (d_rot / 2);
}

// Fills cos and sin [positions x d_rot/2] (rope_table_floats each). d_rot even and > 0, base > 0:
// else invalid_argument; null pointers: null_pointer. Base 10000 (Llama 2, HF default), 500000
// (Llama 3), 1000000 (Qwen2). A table filled once: not in the kernel list (lib/src/kernel_list.def).
Status rope_table_f32(std::size_t positions, std::size_t d_rot, float base, float* cos,
                      float* sin) noexcept;

// RoPE scaling: Hugging Face's rope_scaling / rope_parameters (rope_type), as
// transformers' modeling_rope_utils.py computes each type's inv_freq and attention factor in
// float32 (its pure-Python values in double, rounded to float32 where they meet a tensor):
//   none      inv_freq[i] = 1 / base^(2i / d_rot)
//   linear    inv_freq / factor
//   dynamic   NTK: base * ((factor * L / L) - (factor - 1))^(d_rot / (d_rot - 2)) at lengths L up to
//             original_max_positions (max_position_embeddings), which is the unscaled table. Past
//             it transformers recomputes inv_freq per call from that call's length and keeps it
//             for later calls: a Config past it does not compile.
//   yarn      the ramp between inv_freq / factor and inv_freq over the dims whose rotations at
//             original_max_positions lie between beta_fast and beta_slow (floored and ceiled when
//             truncate); cos and sin times attention_factor (0: 0.1 ln(factor) + 1, 1 if factor <= 1)
//   longrope  inv_freq / short_factor[i] (d_rot/2 factors); cos and sin times attention_factor (0:
//             sqrt(1 + ln(factor) / ln(original_max_positions)), 1 if factor <= 1). transformers
//             switches to long_factor for a call whose last position is >= original_max_positions:
//             a Config with more positions than that does not compile.
//   llama3    Llama 3.1: wavelengths 2 pi / inv_freq above original / low_freq_factor divided by
//             factor, below original / high_freq_factor kept, between them smoothly blended
enum class RopeScaling : unsigned char { none, linear, dynamic, yarn, longrope, llama3 };

// One layer's scaling; make it with the functions below (their arguments are config.json's keys).
struct RopeScalingParams {
  RopeScaling type = RopeScaling::none;
  float factor = 1.0f;                      // linear, dynamic, yarn, longrope, llama3
  std::size_t original_max_positions = 0;   // dynamic, yarn, longrope, llama3
  float low_freq_factor = 1.0f, high_freq_factor = 4.0f;  // llama3
  float beta_fast = 32.0f, beta_slow = 1.0f;              // yarn
  bool truncate = true;                                   // yarn
  float attention_factor = 0.0f;  // yarn, longrope: cos and sin scale; 0 = the type's default
  const float* short_factor = nullptr;  // longrope: d_rot/2 factors, in static storage (null: a
                                        // layer's forward() returns invalid_argument)
};

constexpr RopeScalingParams rope_linear(float factor) noexcept {
  RopeScalingParams s;
  s.type = RopeScaling::linear;
  s.factor = factor;
  return s;
}
// max_position_embeddings: config.json's (transformers' dynamic type scales past it).
constexpr RopeScalingParams rope_dynamic(float factor, std::size_t max_position_embeddings) noexcept {
  RopeScalingParams s = rope_linear(factor);
  s.type = RopeScaling::dynamic;
  s.original_max_positions = max_position_embeddings;
  return s;
}
// original_max_positions: rope_scaling's original_max_position_embeddings, else
// max_position_embeddings; factor: rope_scaling's factor, or max_position_embeddings /
// original_max_position_embeddings where rope_scaling has the latter (as transformers does).
constexpr RopeScalingParams rope_yarn(float factor, std::size_t original_max_positions, float beta_fast = 32.0f,
                                      float beta_slow = 1.0f, float attention_factor = 0.0f,
                                      bool truncate = true) noexcept {
  RopeScalingParams s = rope_dynamic(factor, original_max_positions);
  s.type = RopeScaling::yarn;
  s.beta_fast = beta_fast;
  s.beta_slow = beta_slow;
  s.attention_factor = attention_factor;
  s.truncate = truncate;
  return s;
}
// factor: max_position_embeddings / original_max_position_embeddings where config.json has the
// latter (Phi-3), else rope_scaling's factor; used only for the default attention factor.
constexpr RopeScalingParams rope_longrope(const float* short_factor, float factor,
                                          std::size_t original_max_positions,
                                          float attention_factor = 0.0f) noexcept {
  RopeScalingParams s = rope_dynamic(factor, original_max_positions);
  s.type = RopeScaling::longrope;
  s.short_factor = short_factor;
  s.attention_factor = attention_factor;
  return s;
}
constexpr RopeScalingParams rope_llama3(float factor, float low_freq_factor, float high_freq_factor,
                                        std::size_t original_max_positions) noexcept {
  RopeScalingParams s = rope_dynamic(factor, original_max_positions);
  s.type = RopeScaling::llama3;
  s.low_freq_factor = low_freq_factor;
  s.high_freq_factor = high_freq_factor;
  return s;
}

// inv_freq [d_rot/2] and the factor cos and sin are multiplied by, as transformers computes them
// for the scaling s at lengths up to s.original_max_positions. invalid_argument: d_rot odd or 0,
// base <= 0, or a parameter out of its type's range (factor <= 0, original_max_positions 0 where
// used, high_freq_factor <= low_freq_factor, d_rot 2 with dynamic); null_pointer: inv_freq,
// attention_factor or longrope's short_factor null.
Status rope_inv_freq_f32(std::size_t d_rot, float base, const RopeScalingParams& s, float* inv_freq,
                         float* attention_factor) noexcept;

// rope_table_f32 with a scaling: cos(p inv_freq[i]) * attention factor, and sin likewise (the
// product rounded to float32 once, as transformers' emb.cos() * attention_scaling). Checks as
// rope_inv_freq_f32 and rope_table_f32.
Status rope_table_scaled_f32(std::size_t positions, std::size_t d_rot, float base, const RopeScalingParams& s,
                             float* cos, float* sin) noexcept;

// Rotates, in place, the first t.d_rot dims of each of `heads` heads (head_dim floats each) of
// `rows` rows of x (row stride ldx >= heads * head_dim); row r is at position pos0 + r. Checked
// before anything is written: d_rot even, > 0 and <= head_dim (invalid_argument), pos0 + rows <=
// t.positions (too_long), pointers (null_pointer).
Status rope_f32(std::size_t rows, std::size_t heads, std::size_t head_dim, RopePairing pairing,
                std::size_t pos0, const RopeTable& t, float* x, std::size_t ldx) noexcept;

}  // namespace emha

namespace emha {

// xPos (torchscale component/xpos_relative_position.py, XPOS.forward(x, offset, downscale)) on
// rows of x: RoPE with interleaved pairs over the whole head, each pair's cos and sin scaled by
// zeta_i^(c / scale_base), zeta_i = (2i + 0.4 head_dim) / (1.4 head_dim), c the position centred
// on the n_total positions so far: c = p - ceil(n_total / 2) for p = 0 .. n_total - 1. The rows
// are the last `rows` of those positions (torchscale's offset = n_total - rows: a decode step's
// one query is row n_total - 1). downscale (keys) uses 1 / factor. scale_base: torchscale's
// xpos_scale_base, 512. t: rope_table_f32(>= n_total, head_dim, 10000) (torchscale's
// fixed_pos_embedding angles are these). torchscale's float32 arithmetic, step for step.
// Checked before anything is written: head_dim even and t.d_rot == head_dim (invalid_argument),
// rows <= n_total <= t.positions (too_long), pointers (null_pointer).
// Not in the kernel list (lib/src/kernel_list.def): one scalar body for every build (interleaved
// pairs, a powf per pair), the arithmetic of rope_ref.hpp, tested against float64.
Status xpos_f32(std::size_t rows, std::size_t heads, std::size_t head_dim, std::size_t n_total,
                bool downscale, float scale_base, const RopeTable& t, float* x,
                std::size_t ldx) noexcept;

// xPos at given positions with a given centre: rows are positions first .. first + rows - 1,
// centred as on n_centre positions (c = p - ceil(n_centre / 2)); xpos_f32 is this with first =
// n_total - rows and n_centre = n_total. Why: q_i . k_j carries zeta^((i - j) / scale_base)
// whatever the centre (it cancels), so a KvCache centres on its capacity once and its keys never
// need rescaling, where torchscale re-centres (and re-applies xPos to) every cached key at each
// step: the same scores in exact arithmetic, not in the last bits. Checks as xpos_f32, with
// first + rows <= t.positions (too_long).
Status xpos_centred_f32(std::size_t rows, std::size_t heads, std::size_t head_dim, std::size_t first,
                        std::size_t n_centre, bool downscale, float scale_base, const RopeTable& t,
                        float* x, std::size_t ldx) noexcept;

}  // namespace emha

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

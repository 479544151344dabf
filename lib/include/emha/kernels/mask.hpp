// SPDX-License-Identifier: Apache-2.0
#pragma once
// Attention masks applied in place to a score block s[rows x cols] (row = query, column = key),
// or converted to an additive mask. "Masked" writes -inf, so softmax gives that key weight 0.
// All strides are in elements.

#include <cstddef>
#include <limits>

namespace emha {

inline constexpr float mask_neg_inf = -std::numeric_limits<float>::infinity();

// A mask tensor broadcast over batch and heads: the block for (batch b, head h) starts at
// data + b * batch_stride + h * head_stride, rows ld apart. A stride of 0 broadcasts.
template <class T>
struct MaskView {
  const T* data = nullptr;
  std::size_t ld = 0;
  std::size_t head_stride = 0;
  std::size_t batch_stride = 0;

  const T* block(std::size_t batch, std::size_t head) const noexcept {
    return data + batch * batch_stride + head * head_stride;
  }
};

// Causal: key j masked for query row i when j > i + diagonal (torch.triu's diagonal + 1).
// diagonal = position of row 0 minus position of column 0: 0 for a square self-attention
// block, seq_kv - seq_q when new queries follow a cache, negative for a block of keys that
// starts after its first query (fused attention tiles).
void mask_causal_f32(std::size_t rows, std::size_t cols, std::ptrdiff_t diagonal, float* s,
                     std::size_t lds) noexcept;

// Sliding window (Mistral, Gemma): key j masked for query row i when it is `window` or more
// positions behind it, (i + diagonal) - j >= window, with `diagonal` as in mask_causal_f32. A
// query keeps `window` keys, its own included (HF's eager count; FA2's window_size=(W, W) keeps
// W + 1). With the causal mask, the band of keys i + diagonal - window + 1 .. i + diagonal.
// Not in the kernel list (lib/src/kernel_list.def): one scalar body for every build, which stores
// -inf over a computed range of each row, is its own reference (mask_window_f32_ref for tests).
void mask_window_f32(std::size_t rows, std::size_t cols, std::ptrdiff_t diagonal, std::size_t window,
                     float* s, std::size_t lds) noexcept;

// Attention logit soft-capping (Gemma 2's attn_logit_softcapping): s[i][j] = cap * tanh(s[i][j] /
// cap) on the scaled scores, before any bias or mask, each of the three steps rounded to float
// as transformers' eager path (scores / softcap, tanh, * softcap). cap > 0. Not in the kernel list
// (lib/src/kernel_list.def): one scalar body for every build (a tanhf per score), its own
// reference.
void mask_softcap_f32(std::size_t rows, std::size_t cols, float cap, float* s, std::size_t lds) noexcept;

// Key padding by length: keys j >= valid are masked.
void mask_key_valid_f32(std::size_t rows, std::size_t cols, std::size_t valid, float* s,
                        std::size_t lds) noexcept;

// Key padding by flags: key j masked where ignore[j] (PyTorch key_padding_mask: true = ignore).
void mask_key_ignore_f32(std::size_t rows, std::size_t cols, const bool* ignore, float* s,
                         std::size_t lds) noexcept;

// Boolean mask, true = masked (PyTorch MHA attn_mask polarity): s[i][j] = -inf where
// masked[i * ldm + j]. ldm = 0 broadcasts one row.
void mask_bool_f32(std::size_t rows, std::size_t cols, const bool* masked, std::size_t ldm,
                   float* s, std::size_t lds) noexcept;

// Boolean -> additive: out[i][j] = masked[i * ldm + j] ? -inf : 0.
void mask_bool_to_additive_f32(std::size_t rows, std::size_t cols, const bool* masked,
                               std::size_t ldm, float* out, std::size_t ldo) noexcept;

// Additive float mask: s[i][j] += add[i * ldm + j]. ldm = 0 broadcasts one row.
void mask_add_f32(std::size_t rows, std::size_t cols, const float* add, std::size_t ldm, float* s,
                  std::size_t lds) noexcept;

// An "attend" mask of any strides, true = attend (labml's mask; mask == 0 is masked):
// s[i][j] = -inf where !keep[i * ld_row + j * ld_col]. ld_row = 0 broadcasts one row. One scalar
// body for every build (compiled once): a strided gather of bools, where the masks above read rows.
// Not in the kernel list (lib/src/kernel_list.def) for that reason.
void mask_attend_f32(std::size_t rows, std::size_t cols, const bool* keep, std::size_t ld_row,
                     std::size_t ld_col, float* s, std::size_t lds) noexcept;

// ALiBi (Press et al., "Train short, test long"): s[i][j] += -slope * |i + diagonal - j|, the
// distance between query row i and key column j with `diagonal` as in mask_causal_f32 (a tile's
// offsets included, so a score tile of the fused path gets its part without any [S_q x S_kv]
// bias existing). Where keys do not follow their query (causal) this is slope * (j - q_pos):
// BLOOM's slope * key_pos and MPT's slope * (j - (S - 1)) up to a per-row constant, which softmax
// cancels; without a causal mask it is the symmetric -slope * |distance| (ggml, MPT "full").
// One rounding for the product (|distance| < 2^24 is exact in float), one for the add.
void mask_alibi_f32(std::size_t rows, std::size_t cols, std::ptrdiff_t diagonal, float slope,
                    float* s, std::size_t lds) noexcept;

}  // namespace emha

#include "emha/status.hpp"

namespace emha {

// ALiBi's per-head slopes, the reference's get_slopes (ofirpress/attention_with_linear_biases,
// copied by HF BLOOM/Falcon and vLLM; MPT's and ggml's formulas give the same sequence): for a
// power of two n, 2^(-8k/n), k = 1..n; otherwise, with c = 2^floor(log2 n), the c slopes of c
// then every other slope of 2c, first n - c of them. Computed in double as the reference's
// Python does (start * start ** i), rounded to float once. heads == 0: invalid_argument.
// A table filled once, in double: no variants, not in the kernel list (lib/src/kernel_list.def).
Status alibi_slopes(std::size_t heads, float* slopes) noexcept;

}  // namespace emha

// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the integer passes share (mha_s8_forward.cpp, mha_s8_vnni.hpp, mha_s16x8_forward.cpp): a
// sequence's rows in the caller's layout, and the masks read key by key (the float layer's masks,
// the float ones excluded by validation). In the includer's variant namespace (isa.hpp), so that
// no variant's copy of these is another's.

#include <cstddef>

#include "emha/attention/options.hpp"
#include "emha/detail/mha_plan.hpp"
#include "isa.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

// One sequence's rows of a [B, S, dim] or [S, B, dim] tensor: row i at p + i * ld.
template <class T>
struct Rows {
  T* p;
  std::size_t ld;
};
template <class T>
Rows<T> rows_of(T* base, const AttentionShape& sh, std::size_t b, std::size_t seq, std::size_t dim) noexcept {
  return sh.layout == Layout::batch_first ? Rows<T>{base + b * seq * dim, dim} : Rows<T>{base + b * dim, sh.batch * dim};
}

// Whether a mask other than the causal one is given (the causal one only shortens the row).
inline bool key_masks(const AttentionMasks& m) noexcept {
  return m.key_ignored.data || m.key_lengths.data || m.attn_masked.data || m.attend.data;
}

// Whether key j is masked for query i of head h in sequence b by a mask other than the causal one.
inline bool masked(const MhaDims& d, const AttentionShape& sh, const AttentionMasks& m, std::size_t b, std::size_t h,
                   std::size_t i, std::size_t j) noexcept {
  if (m.key_ignored.data && m.key_ignored.data[b * sh.seq_kv + j]) return true;
  if (m.key_lengths.data && j >= m.key_lengths.data[b]) return true;
  if (m.attn_masked.data) {
    const std::size_t block = m.attn_mask_shape == MaskShape::shared    ? 0
                              : m.attn_mask_shape == MaskShape::per_head ? h
                                                                         : b * d.heads + h;
    if (m.attn_masked.data[(block * sh.seq_q + i) * sh.seq_kv + j]) return true;
  }
  if (m.attend.data) {
    const std::size_t r = m.attend_rows == 1 ? 0 : i, c = m.attend_batch == 1 ? 0 : b;
    if (!m.attend.data[(r * sh.seq_kv + j) * m.attend_batch + c]) return true;
  }
  return false;
}

// Keys 0 .. used - 1 of query row i can be unmasked: the causal mask keeps j <= i + causal_offset.
inline std::size_t keys_used(const AttentionMasks& m, std::size_t skv, std::size_t i) noexcept {
  if (m.causal && m.causal_offset < skv && i + m.causal_offset + 1 < skv) return i + m.causal_offset + 1;
  return skv;
}

// Query row i's probabilities over keys 0 .. skv - 1 into row: softmax(n, x, y) of its scores
// over the `used` keys the causal mask leaves, those other masks remove first packed out of it
// (probs and keep: [used] of scratch) and given `none` (the probability whose weight in P V is 0),
// as are the keys past used; copied to p_out unless null.
template <class T, class Softmax>
void row_probabilities(const MhaDims& d, const AttentionShape& sh, const AttentionMasks& m, std::size_t b,
                       std::size_t h, std::size_t i, std::size_t used, const T* scores, T* probs, std::int8_t* keep,
                       T none, T* row, T* p_out, Softmax&& softmax) noexcept {
  const std::size_t skv = sh.seq_kv;
  if (!key_masks(m)) {
    softmax(used, scores, row);
  } else {  // TFLite's softmax of the unmasked scores, packed
    std::size_t n = 0;
    for (std::size_t j = 0; j < used; ++j) {
      keep[j] = !masked(d, sh, m, b, h, i, j);
      if (keep[j]) probs[n++] = scores[j];
    }
    if (n > 0) softmax(n, probs, probs);
    for (std::size_t j = 0, at = 0; j < used; ++j) row[j] = keep[j] ? probs[at++] : none;
  }
  for (std::size_t j = used; j < skv; ++j) row[j] = none;
  if (p_out)
    for (std::size_t j = 0; j < skv; ++j) p_out[j] = row[j];
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

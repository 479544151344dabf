// SPDX-License-Identifier: Apache-2.0
#pragma once
// One query token over a long key range, split over the keys (flash-decoding; attend_split in
// stage_attend.hpp): the range [begin, end) is cut into chunks of mha_split_keys, and each
// (K/V head, chunk) pair is an item a task runs: the group's query heads (one head without GQA) over the chunk's keys
// (attend_group, not finished), leaving per row the chunk's unnormalized context o_c, its max m_c
// and its sum l_c. The caller then combines the chunks of each head, in chunk order:
//   m = max_c m_c,  l = sum_c l_c exp(m_c - m),  o = sum_c o_c exp(m_c - m),  ctx = o / l
// (softmax_online_finish). A decode step's heads or groups are few next to the workers a long
// cache could keep busy; the chunks are more items, each reading its part of the cache once.
// Bits: the chunks are fixed by the key range alone (never by the workers), every item runs the
// code one thread runs, and the combination has one order: the same bits on any number of
// threads. A chunk whose keys are all masked has m_c = -inf and adds nothing (a NaN sum stays).
// SIMD builds only, as the stacked group (attend_group).

#include <cmath>
#include <cstddef>
#include <limits>

#include "attention/group_attention.hpp"
#include "attention/pass.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

// Chunks of a one-query range: 1 (no split) up to mha_split_keys keys.
inline std::size_t split_chunks(KeyRange keys) noexcept {
  const std::size_t n = keys.end > keys.begin ? keys.end - keys.begin : 0;
  return n > mha_split_keys ? (n + mha_split_keys - 1) / mha_split_keys : 1;
}

// Chunk c's partials in Pass::split (mha_split_floats): its contexts [heads x d_k] (head h at
// h * d_k, as in ctx's row), then its maxima [heads], then its sums [heads].
struct SplitChunk {
  float* ctx;
  float* max;
  float* sum;
};
inline SplitChunk split_chunk(const Pass& s, std::size_t c) noexcept {
  const MhaDims& d = s.d;
  float* base = s.split + c * (d.q_dim() + 2 * d.heads);
  return {base, base + d.q_dim(), base + d.q_dim() + d.heads};
}

// ctx_h = the chunks of head h combined, for every head (the order above).
template <class K>
[[gnu::noinline]] void combine_chunks(const Pass& s, std::size_t chunks) noexcept {
  constexpr float neg_inf = -std::numeric_limits<float>::infinity();
  const MhaDims& d = s.d;
  const std::size_t dk = d.d_k();
  for (std::size_t h = 0; h < d.heads; ++h) {
    float m = neg_inf;
    for (std::size_t c = 0; c < chunks; ++c) {
      const float mc = split_chunk(s, c).max[h];
      m = mc > m ? mc : m;
    }
    float l = 0.0f;
    float* ctx = s.ctx + h * dk;
    for (std::size_t i = 0; i < dk; ++i) ctx[i] = 0.0f;
    for (std::size_t c = 0; c < chunks; ++c) {
      const SplitChunk p = split_chunk(s, c);
      if (p.max[h] == neg_inf) {  // nothing unmasked in this chunk
        l += p.sum[h];            // 0, or a NaN to pass on
        continue;
      }
      const float w = std::exp(p.max[h] - m);
      l += p.sum[h] * w;
      const float* o = p.ctx + h * dk;
      for (std::size_t i = 0; i < dk; ++i) ctx[i] += o[i] * w;
    }
    K::softmax_online_finish_f32(1, dk, &l, ctx, dk);
  }
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

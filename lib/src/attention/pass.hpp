// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the stages of one forward() call read (lib/src/attention/stage_*.hpp): its arguments, the
// object's weights and tables, and the arena buffers that live across the pass. Built once per call
// and passed by reference; each stage runs out of line, so that only the running stage's locals
// are on the stack (the deepest chain, forward -> a stage -> a head -> a GEMM, is what a firmware
// must reserve: tests/firmware/stack_budget.py).

#include <cstddef>

#include "attention/parallel.hpp"
#include "emha/detail/mha_plan.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

// Rows of one sequence inside a [B, S, D] or [S, B, D] tensor: start and row stride.
template <class T>
struct Rows {
  T* p;
  std::size_t ld;
};
template <class T>
Rows<T> rows_of(T* base, std::size_t b, std::size_t seq, std::size_t dim,
                const AttentionShape& sh) noexcept {
  if (sh.layout == Layout::batch_first) return {base + b * seq * dim, dim};
  return {base + b * dim, sh.batch * dim};
}

struct Pass {
  const MhaDims& d;
  const MhaWeights& w;
  const MhaPacked& packed;
  const MhaPositions& positions;
  const AttentionShape& sh;
  const ForwardOptions& o;
  // Pointers, not spans (sizes are checked before a stage runs): a smaller Pass is a smaller
  // frame at the bottom of the deepest call chain.
  const float* query;              // the caller's query: the residual of pre- and post-LN
  const float* in_q;               // what the projections read: the inputs, or with pre-LN
  const float* in_k;               // Norm(query) (held in `out`) for each input that is the query
  const float* in_v;
  float* out;
  float* qkv;  // [max(S_q, S_kv), qkv_dim]: Q | K | V of the current sequence
  float* ctx;  // [S_q, q_dim]: the heads' outputs, concatenated
  float* split;  // one query token (SIMD kernels): mha_split_floats of chunk partials, else null
  TaskSlots slots;  // each task's scratch (parallel.hpp)
  const KvCacheView* cache;  // incremental decoding, else null
  std::size_t new_kv;        // K/V rows projected per sequence (kv_rows_projected)
};

// Positions sequence b has seen before this call (0 without a cache): its new tokens' first
// position.
inline std::size_t cached(const Pass& s, std::size_t b) noexcept {
  return s.cache ? s.cache->lengths[b] : 0;
}
// Sequence b's K (kind 0) or V (kind 1) block of K/V head g in a cache, head-major:
// [capacity x d_k], position row r at r * d_k (kv_cache.hpp).
inline float* kv_rows(const KvCacheView& c, const MhaDims& d, std::size_t b, std::size_t kind,
                      std::size_t g) noexcept {
  return c.data + ((b * 2 + kind) * d.kv_heads + g) * c.capacity * d.d_k();
}
// The same block of an int8 cache, and its rows' scales [capacity].
inline std::int8_t* kv_rows8(const KvCacheView& c, const MhaDims& d, std::size_t b, std::size_t kind,
                             std::size_t g) noexcept {
  return c.data8 + ((b * 2 + kind) * d.kv_heads + g) * c.capacity * d.d_k();
}
inline float* kv_scales(const KvCacheView& c, const MhaDims& d, std::size_t b, std::size_t kind,
                        std::size_t g) noexcept {
  return c.scales + ((b * 2 + kind) * d.kv_heads + g) * c.capacity;
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

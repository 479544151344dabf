// SPDX-License-Identifier: Apache-2.0
#pragma once
// Stage: every head of one sequence into Pass::ctx, fused unless the attention weights are wanted
// (head_attention.hpp). Items: fused, (head, query tile) pairs; unfused, heads, or all heads as
// one item when their weights are averaged (each head adds into the same average, in head order).
// A GQA/MQA decode step (S_q == 1, fused, SIMD kernels) stacks each group's query heads against
// their shared K/V head instead (group_attention.hpp): items are groups, or parts of them; over
// more than mha_split_keys keys, (K/V head, chunk of keys) pairs (split_attention.hpp).

#include <cmath>

#include "attention/group_attention.hpp"
#include "attention/head_attention.hpp"
#include "attention/pass.hpp"
#include "attention/return_on_error.hpp"
#include "attention/split_attention.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

// The fused path's buffers for one query tile, from a task's slot.
inline Status allocate_fused(const AttentionShape& sh, ArenaRef& arena, FusedScratch& f) noexcept {
  const std::size_t bq = mha_min(sh.seq_q, mha_block_q), bk = mha_min(sh.seq_kv, mha_block_kv);
  EMHA_TRY(arena.allocate(bq * bk, f.s, 64));
  EMHA_TRY(arena.allocate(bq, f.row_max, 64));
  return arena.allocate(bq, f.row_sum, 64);
}

// Head h of sequence b: its Q columns of Pass::qkv; the K and V columns of its K/V head
// g = h / group (GQA: the group's heads index one shared head, never a repeated copy), from
// Pass::qkv, or with a cache from sequence b's cache rows (the rows it held and the new ones just
// appended: query 0 is key `held`; static K/V: the rows it holds, queries from key 0 as without a
// cache); its ALiBi slope or T5's bias.
// Out of line: its locals stay off attend_stage's frame, which sits on the deepest call chain
// (Cortex-M55 stack, tests/firmware/stack_budget.py).
[[gnu::noinline]] inline HeadInputs head_inputs(const Pass& s, std::size_t b, std::size_t h) noexcept {
  const MhaDims& d = s.d;
  const std::size_t dk = d.d_k(), g = h / d.group(), ld = d.qkv_dim();
  const float* slopes = s.positions.alibi_slopes;
  const float slope = slopes ? slopes[h] : 0.0f;
  const RelativeBias* rel = d.position == Position::relative_bias ? &s.positions.relative : nullptr;
  if (!s.cache)
    return HeadInputs{s.qkv + h * dk, ld, s.qkv + d.proj_col(1) + g * dk, s.qkv + d.proj_col(2) + g * dk,
                      ld, s.sh.seq_kv, 0, slope, rel};
  const KvCacheView& c = *s.cache;
  const std::size_t len = c.held(b);
  const std::size_t q_pos = c.use == KvUse::append ? len : 0;
  return HeadInputs{s.qkv + h * dk, ld, kv_rows(c, d, b, 0, g), kv_rows(c, d, b, 1, g), dk, len + s.new_kv,
                    q_pos, slope, rel};
}
// The same head over an int8 cache (a call with one: Pass::cache set).
[[gnu::noinline]] inline HeadInputs8 head_inputs8(const Pass& s, std::size_t b, std::size_t h) noexcept {
  const MhaDims& d = s.d;
  const KvCacheView& c = *s.cache;
  const std::size_t dk = d.d_k(), g = h / d.group(), len = c.held(b);
  const float* slopes = s.positions.alibi_slopes;
  HeadInputs8 in{};
  static_cast<HeadInputs&>(in) =
      HeadInputs{s.qkv + h * dk, d.qkv_dim(), kv_scales(c, d, b, 0, g), kv_scales(c, d, b, 1, g), dk, len + s.new_kv,
                 c.use == KvUse::append ? len : 0, slopes ? slopes[h] : 0.0f,
                 d.position == Position::relative_bias ? &s.positions.relative : nullptr};
  in.k8 = kv_rows8(c, d, b, 0, g);
  return in;
}
template <bool Kv8>
inline HeadInputsOf<Kv8> head_inputs_of(const Pass& s, std::size_t b, std::size_t h) noexcept {
  if constexpr (Kv8) return head_inputs8(s, b, h);
  else return head_inputs(s, b, h);
}
inline HeadOutput head_output(const Pass& s, std::size_t h) noexcept {
  return HeadOutput{s.ctx + h * s.d.d_k(), s.d.q_dim()};
}

// One query token per sequence with GQA/MQA: items are (group, part) pairs, part-major, each part
// `rows` consecutive heads of its group (the last one may have fewer) read against their K/V
// head in one pass. One part per group, unless there are fewer groups than the tasks the
// per-head path would run (MQA on several threads): then each group is cut into as many parts as
// that takes, each reading the K/V head once: the cache is read kv_heads * parts times (about
// max(kv_heads, tasks)), not `heads` times, and no thread idles. Every row is computed alone
// (attend_group), so the bits do not depend on the parts or the threads. Kv8: over an int8 cache.
template <class K, bool Kv8>
[[gnu::noinline]] Status attend_groups(const Pass& s, std::size_t b, float scale, std::size_t flops,
                                      std::size_t bytes) noexcept {
  const MhaDims& d = s.d;
  const std::size_t group = d.group();
  const std::size_t want = stage_tasks(s.slots, d.heads, flops, bytes);
  const std::size_t parts = mha_min(group, (want + d.kv_heads - 1) / d.kv_heads);
  const std::size_t rows = (group + parts - 1) / parts, items = d.kv_heads * ((group + rows - 1) / rows);
  return for_items(s.slots, items, stage_tasks(s.slots, items, flops, bytes),
                   [&s, b, scale, group, rows](std::size_t i, ArenaRef& arena) noexcept {
    const std::size_t g = i % s.d.kv_heads, first = i / s.d.kv_heads * rows;
    const std::size_t h0 = g * group + first, n = mha_min(rows, group - first);
    ArenaScope scope(arena);
    FusedScratch f{};
    EMHA_TRY(allocate_group(s.sh, n, arena, f));
    const HeadInputsOf<Kv8> in = head_inputs_of<Kv8>(s, b, h0);
    return attend_group<K, Kv8>(s.d, s.sh, s.o, b, h0, n, in, s.positions.alibi_slopes, scale,
                           one_query_keys(s.d, s.sh, s.o, in), true, f,
                           HeadOutput{s.ctx + h0 * s.d.d_k(), s.d.d_k()});
  });
}

// One query token over more than mha_split_keys keys (split_attention.hpp): items are (K/V head,
// chunk) pairs, K/V-head-major, each the group's heads (one head without GQA) over the chunk;
// then the chunks are combined on the caller. Kv8: over an int8 cache.
template <class K, bool Kv8>
[[gnu::noinline]] Status attend_split(const Pass& s, std::size_t b, float scale, KeyRange keys,
                                      std::size_t chunks, std::size_t flops, std::size_t bytes) noexcept {
  const std::size_t items = s.d.kv_heads * chunks;
  const Status status = for_items(s.slots, items, stage_tasks(s.slots, items, flops, bytes),
                                  [&s, b, scale, keys](std::size_t i, ArenaRef& arena) noexcept {
    const std::size_t group = s.d.group(), dk = s.d.d_k(), c = i / s.d.kv_heads, h0 = i % s.d.kv_heads * group;
    const std::size_t begin = keys.begin + c * mha_split_keys;
    ArenaScope scope(arena);
    FusedScratch f{};
    EMHA_TRY(allocate_group(s.sh, group, arena, f));
    const SplitChunk p = split_chunk(s, c);
    f.row_max = p.max + h0;
    f.row_sum = p.sum + h0;
    return attend_group<K, Kv8>(s.d, s.sh, s.o, b, h0, group, head_inputs_of<Kv8>(s, b, h0), s.positions.alibi_slopes, scale,
                           KeyRange{begin, mha_min(keys.end, begin + mha_split_keys)}, false, f,
                           HeadOutput{p.ctx + h0 * dk, dk});
  });
  if (status == Status::ok) combine_chunks<K>(s, chunks);
  return status;
}

// The bodies capture only the Pass, the sequence and the scale: what they capture is a frame at
// the bottom of the deepest call chain (Cortex-M stack, tests/firmware/stack_budget.py). Kv8: a
// call with an int8 cache (Pass::cache set); its unfused heads take attend_unfused_int8.
template <class K, bool Kv8>
[[gnu::noinline]] Status attend_stage(const Pass& s, std::size_t b) noexcept {
  const MhaDims& d = s.d;
  const float scale = s.o.scale != 0.0f ? s.o.scale : resolved_scale(d.scale, d.d_k());
  const std::size_t flops = 4 * s.sh.seq_q * s.sh.seq_kv * d.q_dim();
  const std::size_t bytes = sizeof(float) * (2 * s.sh.seq_kv * d.kv_dim() + s.sh.seq_q * d.q_dim());  // K, V, Q
  if (s.o.attn_weights.data == nullptr) {  // fused
    if constexpr (K::stack_groups) {
      if (s.sh.seq_q == 1 && s.split) {
        const KeyRange keys = one_query_keys(d, s.sh, s.o, head_inputs_of<Kv8>(s, b, 0));
        const std::size_t chunks = split_chunks(keys);
        if (chunks > 1) return attend_split<K, Kv8>(s, b, scale, keys, chunks, flops, bytes);
      }
      if (s.sh.seq_q == 1 && d.kv_heads < d.heads) return attend_groups<K, Kv8>(s, b, scale, flops, bytes);
    }
    const std::size_t items = d.heads * fused_tiles(s.sh);
    return for_items(s.slots, items, stage_tasks(s.slots, items, flops, bytes),
                     [&s, b, scale](std::size_t i, ArenaRef& arena) noexcept {
      // Tile-major: items are taken in order, so the short last tiles of the heads come last,
      // where they fill the gaps of the tasks that finish first.
      const std::size_t h = i % s.d.heads;
      ArenaScope scope(arena);
      FusedScratchOf<Kv8> f{};
      EMHA_TRY(allocate_fused(s.sh, arena, f));
      EMHA_TRY(allocate_kv_tiles(s.d, s.sh, arena, f));
      return attend_fused<K, Kv8>(s.d, s.sh, s.o, b, h, i / s.d.heads * mha_block_q, head_inputs_of<Kv8>(s, b, h),
                                  scale, f, head_output(s, h), arena);
    });
  }
  const std::size_t per_item = s.o.average_attn_weights ? d.heads : 1, items = d.heads / per_item;
  return for_items(s.slots, items, stage_tasks(s.slots, items, flops, bytes),
                   [&s, b, scale, per_item](std::size_t i, ArenaRef& arena) noexcept {
    for (std::size_t h = i * per_item; h < (i + 1) * per_item; ++h) {
      ArenaScope scope(arena);
      float* scores = nullptr;
      EMHA_TRY(arena.allocate(s.sh.seq_q * s.sh.seq_kv, scores, 64));
      if constexpr (Kv8)
        EMHA_TRY(attend_unfused_int8<K>(s.d, s.sh, s.o, b, h, head_inputs8(s, b, h), scale, scores,
                                        head_output(s, h), arena));
      else
        EMHA_TRY(attend_unfused<K>(s.d, s.sh, s.o, b, h, head_inputs(s, b, h), scale, scores,
                                   head_output(s, h), arena));
    }
    return Status::ok;
  });
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

// SPDX-License-Identifier: Apache-2.0
#pragma once
// Stage (incremental decoding): the new tokens' K and V rows of Pass::qkv (after RoPE) appended
// to sequence b's cache blocks (head-major: one [capacity x d_k] block per K/V head, K then V),
// after the rows it holds; the lengths grow once every sequence is done (mha_forward.cpp), so
// every stage of the call sees the length before it. A rolling cache (sliding window) that
// cannot take them first moves each block's last window - 1 rows to the front (kv_rows_kept),
// and its first position grows by the rows it dropped.

#include "attention/pass.hpp"
#include "attention/return_on_error.hpp"
#include "attention/stage_project.hpp"
#include "emha/kernels/quant.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

// The `count` K | V rows of Pass::qkv (its K and V columns) into sequence b's cache rows from row
// `first`: each K/V head's d_k floats to that head's block, or (an int8 cache) quantized there
// with a scale per row (Kv8: Config::kv_cache_type int8, mha_stage_kv8).
template <bool Kv8>
void store_rows(const Pass& s, std::size_t b, std::size_t first, std::size_t count) noexcept {
  const MhaDims& d = s.d;
  const KvCacheView& c = *s.cache;
  const std::size_t dk = d.d_k(), ld = d.qkv_dim();
  for (std::size_t kind = 0; kind < 2; ++kind)
    for (std::size_t g = 0; g < d.kv_heads; ++g) {
      const float* src = s.qkv + d.proj_col(1 + int(kind)) + g * dk;
      if constexpr (Kv8) {
        quantize_rows_s8(count, dk, src, ld, kv_rows8(c, d, b, kind, g) + first * dk, dk,
                         kv_scales(c, d, b, kind, g) + first);
        continue;
      }
      float* dst = kv_rows(c, d, b, kind, g) + first * dk;
      for (std::size_t i = 0; i < count; ++i, dst += dk, src += ld)
        for (std::size_t j = 0; j < dk; ++j) dst[j] = src[j];
    }
}

// Rows [from, from + n) of each of sequence b's blocks to rows [0, n) (forward: the source is
// later), with their scales in an int8 cache.
template <bool Kv8>
void move_rows_front(const KvCacheView& c, const MhaDims& d, std::size_t b, std::size_t from,
                     std::size_t n) noexcept {
  const std::size_t dk = d.d_k();
  for (std::size_t kind = 0; kind < 2; ++kind)
    for (std::size_t g = 0; g < d.kv_heads; ++g) {
      if constexpr (Kv8) {
        std::int8_t* rows = kv_rows8(c, d, b, kind, g);
        for (std::size_t j = 0; j < n * dk; ++j) rows[j] = rows[from * dk + j];
        float* scales = kv_scales(c, d, b, kind, g);
        for (std::size_t j = 0; j < n; ++j) scales[j] = scales[from + j];
        continue;
      }
      float* rows = kv_rows(c, d, b, kind, g);
      for (std::size_t j = 0; j < n * dk; ++j) rows[j] = rows[from * dk + j];
    }
}

template <class K, bool Kv8>
[[gnu::noinline]] Status append_stage(const Pass& s, std::size_t b) noexcept {
  const MhaDims& d = s.d;
  const KvCacheView& c = *s.cache;
  const std::size_t held = c.held(b);
  const std::size_t kept = kv_rows_kept(held, s.new_kv, c.capacity, c.window);
  if (kept < held) {  // roll: each block's rows [held - kept, held) to [0, kept)
    move_rows_front<Kv8>(c, d, b, held - kept, kept);
    c.firsts[b] += held - kept;
  }
  store_rows<Kv8>(s, b, kept, s.new_kv);
  return Status::ok;
}

// Stage (project_kv, cross-attention's static K/V): sequence b's key and value rows projected
// into Pass::qkv's K and V columns, then stored from row 0 of its cache blocks; the lengths are
// set once every sequence is done (mha_forward.cpp). The projection repeats project_stage's K/V
// part on purpose: shared (inlined, or out of line) it makes this stage Cortex-M55's deepest stack
// chain, over the 1 KiB budget (tests/firmware/stack_budget.py). Int8: int8 weights; Kv8: an
// int8 cache.
template <class K, bool Int8, bool Kv8>
[[gnu::noinline]] Status fill_stage(const Pass& s, std::size_t b) noexcept {
  const MhaDims& d = s.d;
  const std::size_t ld = d.qkv_dim(), skv = s.new_kv;
  const InProj p = in_proj(d, s.w);
  float* const k = s.qkv + d.proj_col(1);
  const Rows<const float> xk = rows_of(s.in_k, b, skv, d.kdim, s.sh);
  if (fused_kv(d, s.packed, s.in_k, s.in_v)) {
    EMHA_TRY((project<K, Int8>(d, s.w, p, s.packed, 1, 2, xk, skv, k, ld, s.slots)));
  } else {
    EMHA_TRY((project<K, Int8>(d, s.w, p, s.packed, 1, 1, xk, skv, k, ld, s.slots)));
    EMHA_TRY((project<K, Int8>(d, s.w, p, s.packed, 2, 1, rows_of(s.in_v, b, skv, d.vdim, s.sh), skv, k + d.kv_dim(), ld,
                        s.slots)));
  }
  store_rows<Kv8>(s, b, 0, skv);
  return Status::ok;
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

#pragma once
// Stage (incremental decoding): the new tokens' K | V rows of Pass::qkv (after RoPE) appended to
// sequence b's cache rows, after the rows it holds; the lengths grow once every sequence is done
// (mha_forward.cpp), so every stage of the call sees the length before it. A rolling cache
// (sliding window) that cannot take them first moves its last window - 1 rows to the front
// (kv_rows_kept), and its first position grows by the rows it dropped.

#include "attention/pass.hpp"
#include "attention/stage_project.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

template <class K>
[[gnu::noinline]] Status append_stage(const Pass& s, std::size_t b) noexcept {
  const KvCacheView& c = *s.cache;
  const std::size_t row = 2 * s.d.kv_dim(), ld = s.d.qkv_dim(), held = c.lengths[b] - c.firsts[b];
  const std::size_t kept = kv_rows_kept(held, s.new_kv, c.capacity, c.window);
  float* const rows = c.data + b * c.capacity * row;
  if (kept < held) {  // roll: rows [held - kept, held) to [0, kept); forward, the source is later
    const float* from = rows + (held - kept) * row;
    for (std::size_t j = 0; j < kept * row; ++j) rows[j] = from[j];
    c.firsts[b] += held - kept;
  }
  float* dst = rows + kept * row;
  const float* src = s.qkv + s.d.d_model;  // the first of the new tokens' K | V rows
  for (std::size_t i = 0; i < s.new_kv; ++i, dst += row, src += ld)
    for (std::size_t j = 0; j < row; ++j) dst[j] = src[j];
  return Status::ok;
}

// Stage (project_kv, cross-attention's static K/V): sequence b's key and value rows projected
// straight into its cache rows, K | V (the GEMM's output row stride is the cache row's), from row
// 0; the lengths are set once every sequence is done (mha_forward.cpp).
template <class K>
[[gnu::noinline]] Status fill_stage(const Pass& s, std::size_t b) noexcept {
  const MhaDims& d = s.d;
  const KvCacheView& c = *s.cache;
  const std::size_t row = 2 * d.kv_dim(), skv = s.new_kv;
  const InProj p = in_proj(d, s.w);
  float* const k = c.data + b * c.capacity * row;
  const Rows<const float> xk = rows_of(s.in_k, b, skv, d.kdim, s.sh);
  if (fused_kv(d, s.packed, s.in_k, s.in_v)) return project<K>(d, p, s.packed, 1, 2, xk, skv, k, row, s.slots);
  EMHA_TRY(project<K>(d, p, s.packed, 1, 1, xk, skv, k, row, s.slots));
  return project<K>(d, p, s.packed, 2, 1, rows_of(s.in_v, b, skv, d.vdim, s.sh), skv, k + d.kv_dim(), row,
                    s.slots);
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

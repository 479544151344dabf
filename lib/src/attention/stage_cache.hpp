#pragma once
// Stage (incremental decoding): the new tokens' K | V rows of Pass::qkv (after RoPE) appended to
// sequence b's cache rows, at its length; the lengths grow once every sequence is done
// (mha_forward.cpp), so every stage of the call sees the length before it.

#include "attention/pass.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

template <class K>
[[gnu::noinline]] Status append_stage(const Pass& s, std::size_t b) noexcept {
  const KvCacheView& c = *s.cache;
  const std::size_t row = 2 * s.d.kv_dim(), ld = s.d.qkv_dim();
  float* dst = c.data + (b * c.capacity + c.lengths[b]) * row;
  const float* src = s.qkv + s.d.d_model;  // the first of the new tokens' K | V rows
  for (std::size_t i = 0; i < s.new_kv; ++i, dst += row, src += ld)
    for (std::size_t j = 0; j < row; ++j) dst[j] = src[j];
  return Status::ok;
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

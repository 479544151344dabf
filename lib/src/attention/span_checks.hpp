// SPDX-License-Identifier: Apache-2.0
#pragma once
// The span rules of set_weights() and forward(), for every layer (mha_validate.cpp,
// mha_s8_validate.cpp): a span is absent when it is {nullptr, 0}; any other span is given, and a
// given span with a null pointer is null_pointer. A required span that is absent is null_pointer
// too; an optional one is simply not used; one the configuration has no use for must be absent
// (invalid_argument). And the length a mask's span must have (mask_elements).

#include <cstddef>
#include <cstdint>

#include "emha/detail/mha_plan.hpp"
#include "emha/span.hpp"
#include "emha/status.hpp"

namespace emha::detail {

template <class T>
bool given(Span<T> s) noexcept {
  return s.data != nullptr || s.size != 0;
}

// Required span with at least `n` elements.
template <class T>
Status check_span(Span<T> s, std::size_t n) noexcept {
  if (!s.data) return Status::null_pointer;
  return s.size < n ? Status::size_mismatch : Status::ok;
}

// Optional span: absent, or as check_span.
template <class T>
Status check_optional(Span<T> s, std::size_t n) noexcept {
  return given(s) ? check_span(s, n) : Status::ok;
}

// A span the configuration does not use: absent, else null_pointer or invalid_argument.
template <class T>
Status check_unused(Span<T> s) noexcept {
  if (!given(s)) return Status::ok;
  return s.data ? Status::invalid_argument : Status::null_pointer;
}

// Weight span present with exactly `n` elements.
template <class T>
Status check_weight(Span<const T> s, std::size_t n) noexcept {
  if (!s.data) return Status::null_pointer;
  return s.size != n ? Status::size_mismatch : Status::ok;
}

// The bytes [begin, end) that forward() reads or writes of a span: its first `n` elements
// (all of it for weights and the arena). Empty when the span is absent.
struct Bytes {
  std::uintptr_t begin, end;
};
template <class T>
Bytes bytes_of(const T* p, std::size_t n) noexcept {
  const auto b = reinterpret_cast<std::uintptr_t>(p);
  return p ? Bytes{b, b + n * sizeof(T)} : Bytes{0, 0};
}
inline bool overlap(Bytes a, Bytes b) noexcept {
  return a.begin < a.end && b.begin < b.end && a.begin < b.end && b.begin < a.end;
}


// The elements of a [S_q, S_kv] mask given per `m` (attn_masked, attn_additive, score_bias).
inline std::size_t mask_elements(const MhaDims& d, const AttentionShape& sh, MaskShape m) noexcept {
  const std::size_t block = sh.seq_q * sh.seq_kv;
  return m == MaskShape::per_head         ? d.heads * block
         : m == MaskShape::per_batch_head ? sh.batch * d.heads * block
                                          : block;
}

}  // namespace emha::detail

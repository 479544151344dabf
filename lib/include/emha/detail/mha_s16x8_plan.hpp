// SPDX-License-Identifier: Apache-2.0
#pragma once
// The size-erased core of the 16x8 layer (emha/attention/mha_s16x8.hpp): its arena and its
// compiled pass (lib/src/attention/mha_s16x8_forward.cpp). Its Config checks are s8's
// (check_config_s8, mha_s8_plan.hpp).

#include <cstddef>
#include <cstdint>

#include "emha/arena.hpp"
#include "emha/attention/config.hpp"
#include "emha/attention/options_s16x8.hpp"
#include "emha/detail/mha_s8_plan.hpp"
#include "emha/status.hpp"

namespace emha::detail {

// The arena of one forward(), per sequence (reused across the batch):
//   Q [S_q x q_dim], K [S_kv x kv_dim], V^T [kv_dim x S_kv], the context [S_q x q_dim] (int16);
//   int64 sums of mha_s16x8_rows query rows' keys or projected rows [4 x max(S_kv, widths)];
//   one query row's keep flags [S_kv] (bytes); one query row's scores and packed scores and
//   mha_s16x8_rows rows of probabilities [S_kv each] (int16). 64-byte aligned each.
inline constexpr std::size_t mha_s16x8_rows = 4;  // rows a gemm_s16x8 / gemm_s16 call takes at once
struct MhaS16x8Arena {
  std::size_t q, k, vt, context, sums, keep, row;  // bytes of each
};
constexpr MhaS16x8Arena mha_s16x8_arena(const MhaDims& d) noexcept {
  const std::size_t kv = d.kv_dim(), skv = d.max_seq_kv;
  std::size_t widest = skv;
  for (std::size_t w : {d.q_dim(), kv, d.d_model}) widest = w > widest ? w : widest;
  return {2 * d.max_seq_q * d.q_dim(), 2 * skv * kv, 2 * kv * skv, 2 * d.max_seq_q * d.q_dim(),
          8 * mha_s16x8_rows * widest, skv, 2 * (2 + mha_s16x8_rows) * skv};
}
constexpr std::size_t mha_s16x8_arena_bytes(const MhaDims& d) noexcept {
  const MhaS16x8Arena a = mha_s16x8_arena(d);
  std::size_t total = 0;
  for (std::size_t b : {a.q, a.k, a.vt, a.context, a.sums, a.keep, a.row}) total += arena_round_up(b, 64);
  return total + 64;  // a caller's arena of unknown alignment
}

// ok, or null_pointer / size_mismatch / invalid_argument (mha_s16x8.hpp's set_weights).
Status mha_s16x8_check_weights(const MhaDims& d, const MhaS16x8Weights& w) noexcept;

// forward(): the whole pass, the softmax's differences requantized with rounding R, on the
// dispatched kernels or (Reference) their references.
template <Rounding R, bool Reference>
Status mha_s16x8_forward(const MhaDims& d, const MhaS16x8Weights& w, ArenaRef& arena, const AttentionShape& shape,
                         Span<const std::int16_t> query, Span<const std::int16_t> key,
                         Span<const std::int16_t> value, Span<std::int16_t> out,
                         const ForwardOptionsS16x8& options) noexcept;

}  // namespace emha::detail

// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the s8 layer's passes share, the general one (mha_s8_forward.cpp, compiled once) and the
// VNNI one (mha_s8_core.cpp, per variant): the arena's buffers, forward()'s frame around a pass and
// a softmax row's multiplier (the general pass itself: emha/detail/mha_s8_plan.hpp).

#include <cstddef>
#include <cstdint>

#include "attention/mha_s8_validate.hpp"
#include "attention/return_on_error.hpp"
#include "emha/detail/mha_s8_plan.hpp"

namespace emha::detail {

// The arena's buffers (MhaS8Arena).
struct MhaS8Buffers {
  std::int8_t *q, *k, *vt, *context;
  std::int32_t *k_sums, *v_sums, *sums;
  std::int32_t* row_sums;               // the attention's Q and P row sums [2 x mha_s8_attend_rows]
  std::int8_t *keep, *scores, *probs;  // one query row's [S_kv] each
  std::int8_t* p;                       // mha_s8_attend_rows rows of probabilities [S_kv each]
  std::int8_t* packed;                  // the VNNI pass's packed rows (mha_s8_vnni.hpp), or
  std::size_t packed_bytes;             // the projections' gemm_s8_staged stage
};
Status mha_s8_allocate(const MhaDims& d, ArenaRef& arena, MhaS8Buffers& b) noexcept;

// forward()'s frame around a pass: the call checked, the buffers taken from the arena (given back
// on return), then sequence(buf, b) for each sequence b of the batch.
template <class Sequence>
Status mha_s8_run(const MhaDims& d, const MhaS8Weights& w, ArenaRef& arena, const AttentionShape& sh,
                  Span<const std::int8_t> query, Span<const std::int8_t> key, Span<const std::int8_t> value,
                  Span<std::int8_t> out, const ForwardOptionsS8& o, Sequence&& sequence) noexcept {
  EMHA_TRY(mha_s8_check_call(d, w, arena, sh, query, key, value, out, o));
  ArenaScope scope(arena);
  MhaS8Buffers buf{};
  EMHA_TRY(mha_s8_allocate(d, arena, buf));
  for (std::size_t b = 0; b < sh.batch; ++b) sequence(static_cast<const MhaS8Buffers&>(buf), b);
  return Status::ok;
}

// softmax_s8_row's output multiplier for a row whose exps sum to `sum` (Q12.19): the reciprocal
// as (inverse, -(bits over unit + 23)), zero point -128 (emha/kernels/softmax_s8.hpp).
QuantizedMultiplier softmax_s8_inverse(std::int32_t sum) noexcept;

}  // namespace emha::detail

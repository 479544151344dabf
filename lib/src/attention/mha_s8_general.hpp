// SPDX-License-Identifier: Apache-2.0
#pragma once
// The s8 layer's parts compiled once (mha_s8_forward.cpp) that its core in each variant
// (mha_s8_core.cpp) shares: the arena's buffers and a softmax row's multiplier (the general pass
// itself: emha/detail/mha_s8_plan.hpp).

#include <cstddef>
#include <cstdint>

#include "emha/detail/mha_s8_plan.hpp"

namespace emha::detail {

// The arena's buffers (MhaS8Arena).
struct MhaS8Buffers {
  std::int8_t *q, *k, *vt, *context;
  std::int32_t *k_sums, *v_sums, *sums;
  std::int8_t *keep, *scores, *probs;  // one query row's [S_kv] each
  std::int8_t* p;                       // mha_s8_attend_rows rows of probabilities [S_kv each]
  std::int8_t* ones;                    // [max(S_kv, d_k)], every byte 1
  std::int8_t* packed;                  // the VNNI pass's packed rows (mha_s8_vnni.hpp)
};
Status mha_s8_allocate(const MhaDims& d, ArenaRef& arena, MhaS8Buffers& b) noexcept;

// softmax_s8_row's output multiplier for a row whose exps sum to `sum` (Q12.19): the reciprocal
// as (inverse, -(bits over unit + 23)), zero point -128 (emha/kernels/softmax_s8.hpp).
QuantizedMultiplier softmax_s8_inverse(std::int32_t sum) noexcept;

}  // namespace emha::detail

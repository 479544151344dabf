// SPDX-License-Identifier: Apache-2.0
#pragma once
// Validation of the integer layers' forward() arguments, s8 and s16x8 (mha_s8_validate.cpp).

#include "emha/detail/mha_s16x8_plan.hpp"
#include "emha/detail/mha_s8_plan.hpp"

namespace emha::detail {

// ok, or the first problem: invalid_argument, too_long, null_pointer, size_mismatch, overlap,
// no_space (emha/attention/mha_s8.hpp).
Status mha_s8_check_call(const MhaDims& d, const MhaS8Weights& w, const ArenaRef& arena, const AttentionShape& shape,
                         Span<const std::int8_t> query, Span<const std::int8_t> key, Span<const std::int8_t> value,
                         Span<std::int8_t> out, const ForwardOptionsS8& options) noexcept;
Status mha_s16x8_check_call(const MhaDims& d, const MhaS16x8Weights& w, const ArenaRef& arena,
                            const AttentionShape& shape, Span<const std::int16_t> query,
                            Span<const std::int16_t> key, Span<const std::int16_t> value, Span<std::int16_t> out,
                            const ForwardOptionsS16x8& options) noexcept;

}  // namespace emha::detail

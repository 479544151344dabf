// SPDX-License-Identifier: Apache-2.0
#pragma once
// Validation of forward() arguments (lib/src/attention/mha_validate.cpp).

#include "emha/detail/mha_plan.hpp"

namespace emha::detail {

// ok, or the first problem: invalid_argument, too_long, null_pointer, size_mismatch, overlap,
// no_space. With a cache (else null), key and value are the query's new tokens (mha.hpp). `w` (checked by mha_check_weights) is read only for its byte ranges.
Status mha_check_call(const MhaDims& d, const MhaWeights& w, const ArenaRef& arena,
                      const AttentionShape& shape, const Span<const float>& query,
                      const Span<const float>& key, const Span<const float>& value,
                      const Span<float>& out, const ForwardOptions& options,
                      const KvCacheView* cache) noexcept;

}  // namespace emha::detail

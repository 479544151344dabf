// SPDX-License-Identifier: Apache-2.0
#pragma once
// Horizontal max and sum of one vector as a pairwise tree over the lanes (depth log2(lanes), not
// a chain of lanes - 1 dependent operations: on short rows the reduction is most of the row's
// latency). The order is fixed per build, so results stay deterministic.

#include "isa_kernels.hpp"
#include "simd_arch.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

inline float reduce_max(simd::vf32 v) noexcept {
  float t[simd::lanes];
  simd::store(t, v);
  for (std::size_t w = simd::lanes / 2; w > 0; w /= 2)
    for (std::size_t i = 0; i < w; ++i) t[i] = t[i + w] > t[i] ? t[i + w] : t[i];
  return t[0];
}

inline float reduce_sum(simd::vf32 v) noexcept {
  float t[simd::lanes];
  simd::store(t, v);
  for (std::size_t w = simd::lanes / 2; w > 0; w /= 2)
    for (std::size_t i = 0; i < w; ++i) t[i] += t[i + w];
  return t[0];
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

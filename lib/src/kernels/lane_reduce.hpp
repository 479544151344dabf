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

// The sums of `lanes` vectors v[0 .. lanes), one per lane of the result (lane t: v[t]'s lanes
// added): a transpose-add network (xsimd::haddp: log2(lanes) levels of shuffles and adds for all
// of them), not `lanes` separate reductions through memory.
// AVX-512 adds each vector's two 256-bit halves and runs AVX's network on both groups of 8:
// xsimd 8.1's own AVX-512 haddp returns lanes 2-5 and 10-13 in the wrong order.
inline simd::vf32 reduce_sums(const simd::vf32* v) noexcept {
#if defined(__AVX512F__)
  using half = xsimd::batch<float, xsimd::avx2>;
  half h[16];
  for (int t = 0; t < 16; ++t) {
    const __m512 x = v[t];
    h[t] = _mm256_add_ps(_mm512_castps512_ps256(x),
                         _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
  }
  const __m256 lo = xsimd::haddp(h), hi = xsimd::haddp(h + 8);
  return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(lo)), _mm256_castps_pd(hi), 1));
#elif defined(EMHA_SIMD_XSIMD)
  return xsimd::haddp(v);
#else  // one lane, or a vector type without a transpose-add here (MVE): one reduction each
  float sums[simd::lanes];
  for (std::size_t t = 0; t < simd::lanes; ++t) sums[t] = reduce_sum(v[t]);
  return simd::load(sums);
#endif
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

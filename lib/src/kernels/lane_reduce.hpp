// SPDX-License-Identifier: Apache-2.0
#pragma once
// Horizontal max and sum of one vector as a pairwise tree over the lanes (depth log2(lanes), not
// a chain of lanes - 1 dependent operations: on short rows the reduction is most of the row's
// latency). The order is fixed per build, so results stay deterministic.

#include "isa_kernels.hpp"
#include "simd_arch.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

#if defined(EMHA_SIMD_XSIMD) && defined(__AVX__)
// x86 with 256- or 512-bit vectors: the same tree in registers (halves of the vector, then
// movehl and a shuffle for the last 4 lanes): lane i with lane i + w at each level, as the
// loops below, so the same bits; through memory, each level's scalar loads waited on the store.
enum class LaneOp { max, sum };

template <LaneOp Op>
inline __m128 lane_fold(__m128 lo, __m128 hi) noexcept {  // lane i with lane i + w
  return Op == LaneOp::max ? _mm_max_ps(hi, lo) : _mm_add_ps(lo, hi);  // max: hi > lo ? hi : lo
}

template <LaneOp Op>
inline float lane_reduce_x86(simd::vf32 v) noexcept {
#if defined(__AVX512F__)
  // The halves by __builtin_shufflevector: GCC 12 flags the undefined upper operand inside
  // _mm512_castps512_ps256 and the extract intrinsics as uninitialized (-Werror).
  const __m512 z = v;
  const __m256 lo = __builtin_shufflevector(z, z, 0, 1, 2, 3, 4, 5, 6, 7);
  const __m256 hi = __builtin_shufflevector(z, z, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m256 y = Op == LaneOp::max ? _mm256_max_ps(hi, lo) : _mm256_add_ps(lo, hi);
#else
  const __m256 y = v;
#endif
  __m128 q = lane_fold<Op>(_mm256_castps256_ps128(y), _mm256_extractf128_ps(y, 1));
  q = lane_fold<Op>(q, _mm_movehl_ps(q, q));
  q = lane_fold<Op>(q, _mm_shuffle_ps(q, q, 1));
  return _mm_cvtss_f32(q);
}

inline float reduce_max(simd::vf32 v) noexcept { return lane_reduce_x86<LaneOp::max>(v); }
inline float reduce_sum(simd::vf32 v) noexcept { return lane_reduce_x86<LaneOp::sum>(v); }
#else
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
#endif

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

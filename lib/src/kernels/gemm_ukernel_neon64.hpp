#pragma once
// Hand-tuned aarch64 micro-kernel: 4 x 16, A read in place, FMA by lane.
//
// Register plan (32 q registers): 16 accumulators c[4][4]; 4 A registers holding 4 rows x 4
// consecutive k (one ld1 each, no packing of A); 4 B registers, one packed row of 16 (one ld1 of
// four). Each k step is 16 `fmla v.4s, b.4s, a.s[lane]`: per 4 k, 4 + 4 loads and 64 FMAs,
// ~7 FLOP per instruction (the limit is 8), where a broadcast kernel (ld1r per row) needs
// one extra load per row and k. B is loaded once per k; nothing is reloaded.

#include "gemm_ukernel.hpp"

#if defined(EMHA_SIMD_XSIMD) && defined(__aarch64__)

#include <arm_neon.h>

namespace emha::detail {
inline namespace EMHA_ISA {

// c[r][v] += b[v] * a[r][L] for one k (lane L of the A registers); bp moves to the next k.
template <int L>
[[gnu::always_inline]] inline void fma_by_lane_4x16(float32x4_t (&c)[4][4], const float32x4_t (&a)[4],
                             const float*& bp) noexcept {
  // One post-incremented `ld1` of four registers. From the intrinsic (vld1q_f32_x4) GCC 12
  // re-derives the address of each of the four loads of a step with an extra `add`, ~10% of
  // the loop; naming the four consecutive registers lets the asm load and advance at once.
  register float32x4_t b0 asm("v28");
  register float32x4_t b1 asm("v29");
  register float32x4_t b2 asm("v30");
  register float32x4_t b3 asm("v31");
  asm volatile("ld1 {v28.4s, v29.4s, v30.4s, v31.4s}, [%[p]], #64"
               : "=w"(b0), "=w"(b1), "=w"(b2), "=w"(b3), [p] "+r"(bp)
               :
               : "memory");
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r) {
    c[r][0] = vfmaq_laneq_f32(c[r][0], b0, a[r], L);
    c[r][1] = vfmaq_laneq_f32(c[r][1], b1, a[r], L);
    c[r][2] = vfmaq_laneq_f32(c[r][2], b2, a[r], L);
    c[r][3] = vfmaq_laneq_f32(c[r][3], b3, a[r], L);
  }
}

// Four k steps: one A load per row (4 consecutive k), each lane then one k.
[[gnu::always_inline]] inline void step4_4x16(float32x4_t (&acc)[4][4], const float*& a0,
                                              const float*& a1, const float*& a2,
                                              const float*& a3, const float*& bp) noexcept {
  const float32x4_t av[4] = {vld1q_f32(a0), vld1q_f32(a1), vld1q_f32(a2), vld1q_f32(a3)};
  a0 += 4;
  a1 += 4;
  a2 += 4;
  a3 += 4;
  fma_by_lane_4x16<0>(acc, av, bp);
  fma_by_lane_4x16<1>(acc, av, bp);
  fma_by_lane_4x16<2>(acc, av, bp);
  fma_by_lane_4x16<3>(acc, av, bp);
}

[[gnu::always_inline]] inline void gemm_ukernel_f32_4x16__neon64(std::size_t kc, const float* a, std::size_t lda,
                                          const float* bp, float* c, std::size_t ldc,
                                          std::size_t m, std::size_t n,
                                          const GemmEpilogue& e) noexcept {
  const float* a0 = a;  // rows past m re-read row m - 1
  const float* a1 = a + (m > 1 ? 1 : 0) * lda;
  const float* a2 = a + (m > 2 ? 2 : m - 1) * lda;
  const float* a3 = a + (m > 3 ? 3 : m - 1) * lda;
  float32x4_t acc[4][4];
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) acc[r][v] = vdupq_n_f32(0.0f);

  const float* const a0_end = a + kc / 4 * 4;
  while (a0 != a0_end) step4_4x16(acc, a0, a1, a2, a3, bp);
  for (std::size_t p = kc / 4 * 4; p < kc; ++p) {  // k tail: one k at a time, A broadcast
    const float32x4_t av[4] = {vdupq_n_f32(*a0++), vdupq_n_f32(*a1++), vdupq_n_f32(*a2++),
                               vdupq_n_f32(*a3++)};
    fma_by_lane_4x16<0>(acc, av, bp);
  }

  simd::vf32 out[4][4];
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) out[r][v] = acc[r][v];
  gemm_store_tile(out, c, ldc, m, n, e);
}

// Chosen over the portable template by overload resolution on the architecture tag.
[[gnu::always_inline]] inline void gemm_ukernel(xsimd::neon64, std::size_t kc, const float* a, std::size_t lda,
                         const float* bp, float* c, std::size_t ldc, std::size_t m, std::size_t n,
                         const GemmEpilogue& e) noexcept {
  static_assert(gemm_mr == 4 && gemm_nr == 16, "the aarch64 tile is 4 x 16");
  gemm_ukernel_f32_4x16__neon64(kc, a, lda, bp, c, ldc, m, n, e);
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

#endif

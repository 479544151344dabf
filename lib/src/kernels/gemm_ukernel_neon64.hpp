// SPDX-License-Identifier: Apache-2.0
#pragma once
// Hand-tuned aarch64 micro-kernel: 4 x 16, A read in place, FMA by lane.
//
// Register plan (32 q registers): 16 accumulators c[4][4]; 8 A registers holding 4 rows x 8
// consecutive k (one ldp each, no packing of A); 4 B registers, one packed row of 16 (one ld1 of
// four). Each k step is 16 `fmla v.4s, b.4s, a.s[lane]`: per 8 k, 4 + 8 loads and 128 FMAs,
// ~7.2 FLOP per instruction (the limit is 8), where a broadcast kernel (ld1r per row) needs
// one extra load per row and k. B is loaded once per k; nothing is reloaded.

#include "gemm_ukernel.hpp"

#if defined(EMHA_SIMD_XSIMD) && defined(__aarch64__)

#include <arm_neon.h>

namespace emha::detail {
inline namespace EMHA_ISA {

// c[v] += b[v] * a[L] for v < 4: one row of the tile, one k (First: c[v] = b[v] * a[L], the
// tile's first k, so the accumulators need no zeroing). In asm with the accumulators tied to
// their registers: from the intrinsics, GCC 12 shuffled them with `mov`s once A took 8
// registers (148 instructions per 8 k instead of 142, and 10 more per tile).
template <int L, bool First>
[[gnu::always_inline]] inline void fma_row_by_lane(float32x4_t (&c)[4], float32x4_t b0, float32x4_t b1,
                                                   float32x4_t b2, float32x4_t b3,
                                                   float32x4_t a) noexcept {
  if constexpr (First) {
    asm("fmul %[c0].4s, %[b0].4s, %[a].s[%[L]]\n\t"
        "fmul %[c1].4s, %[b1].4s, %[a].s[%[L]]\n\t"
        "fmul %[c2].4s, %[b2].4s, %[a].s[%[L]]\n\t"
        "fmul %[c3].4s, %[b3].4s, %[a].s[%[L]]"
        : [c0] "=&w"(c[0]), [c1] "=&w"(c[1]), [c2] "=&w"(c[2]), [c3] "=&w"(c[3])
        : [b0] "w"(b0), [b1] "w"(b1), [b2] "w"(b2), [b3] "w"(b3), [a] "w"(a), [L] "i"(L));
  } else {
    asm("fmla %[c0].4s, %[b0].4s, %[a].s[%[L]]\n\t"
        "fmla %[c1].4s, %[b1].4s, %[a].s[%[L]]\n\t"
        "fmla %[c2].4s, %[b2].4s, %[a].s[%[L]]\n\t"
        "fmla %[c3].4s, %[b3].4s, %[a].s[%[L]]"
        : [c0] "+w"(c[0]), [c1] "+w"(c[1]), [c2] "+w"(c[2]), [c3] "+w"(c[3])
        : [b0] "w"(b0), [b1] "w"(b1), [b2] "w"(b2), [b3] "w"(b3), [a] "w"(a), [L] "i"(L));
  }
}

// c[r][v] += b[v] * a[r][L] for one k (lane L of the A registers); bp moves to the next k.
template <int L, bool First = false>
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
  for (int r = 0; r < 4; ++r) fma_row_by_lane<L, First>(c[r], b0, b1, b2, b3, a[r]);
}

// Four k steps, each lane of av one k.
template <bool First = false>
[[gnu::always_inline]] inline void lanes4_4x16(float32x4_t (&acc)[4][4], const float32x4_t (&av)[4],
                                               const float*& bp) noexcept {
  fma_by_lane_4x16<0, First>(acc, av, bp);
  fma_by_lane_4x16<1>(acc, av, bp);
  fma_by_lane_4x16<2>(acc, av, bp);
  fma_by_lane_4x16<3>(acc, av, bp);
}

// Eight consecutive k of one row into two registers, the pointer advanced: one post-indexed
// `ldp` (the intrinsics give two loads and an add).
[[gnu::always_inline]] inline void load8(const float*& a, float32x4_t& lo, float32x4_t& hi) noexcept {
  asm volatile("ldp %q[lo], %q[hi], [%[p]], #32"
               : [lo] "=w"(lo), [hi] "=w"(hi), [p] "+r"(a)
               :
               : "memory");
}

// Eight k steps: one `ldp` per row (8 consecutive k), 8 B loads, 128 FMAs.
template <bool First = false>
[[gnu::always_inline]] inline void step8_4x16(float32x4_t (&acc)[4][4], const float* (&ar)[4],
                                              const float*& bp) noexcept {
  float32x4_t lo[4], hi[4];
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r) load8(ar[r], lo[r], hi[r]);
  lanes4_4x16<First>(acc, lo, bp);
  lanes4_4x16(acc, hi, bp);
}

// Every other tile store (a partial tile, alpha, bias or beta), out of line, the rows by value:
// inlined, or given the accumulators by reference, GCC 12 kept them in memory for it on every
// tile, the plain ones included.
[[gnu::noinline, gnu::cold]] inline void store_tile_4x16(float32x4x4_t r0, float32x4x4_t r1,
                                                        float32x4x4_t r2, float32x4x4_t r3,
                                                        float* c, std::size_t ldc, std::size_t m,
                                                        std::size_t n, const GemmEpilogue& e) noexcept {
  const float32x4x4_t rows[4] = {r0, r1, r2, r3};
  simd::vf32 out[4][4];
  for (int r = 0; r < 4; ++r)
    for (int v = 0; v < 4; ++v) out[r][v] = rows[r].val[v];
  gemm_store_tile(out, c, ldc, m, n, e);
}

template <bool Blocked>
[[gnu::always_inline]] inline void gemm_ukernel_f32_4x16__neon64(std::size_t kc, const float* a, std::size_t lda,
                                          const float* bp, float* c, std::size_t ldc,
                                          std::size_t m, std::size_t n,
                                          const GemmEpilogue& e) noexcept {
  const float* ar[4] = {a,  // rows past m re-read row m - 1
                        a + (m > 1 ? 1 : 0) * lda, a + (m > 2 ? 2 : m - 1) * lda,
                        a + (m > 3 ? 3 : m - 1) * lda};
  float32x4_t acc[4][4];
  // One chain over k, or with k_blocks (GemmOptions) blocks of gemm_k_block = 16, each a chain
  // from zero, added in order to a running total in L1 (per block: 8 ldp, 16 ld1, 256 FMAs, and
  // 16 loads, adds and stores of the total). A chain runs k 8 at a time (the first 8 start it
  // with fmul; per 16 k: 8 ldp, 16 ld1, 256 FMAs and the loop's compare and branch, 7.26 FLOP
  // per instruction), then 4, then one at a time.
  static_assert(gemm_k_block % 8 == 0, "a block is whole 8-step bodies");
  auto chain = [&](std::size_t len) __attribute__((always_inline)) {
    const float* const a0 = ar[0];
    std::size_t p = len / 8 * 8;
    if (p != 0) {
      step8_4x16<true>(acc, ar, bp);
      const float* const a0_end = a0 + p;
      while (ar[0] != a0_end) step8_4x16(acc, ar, bp);
    } else {
#pragma GCC unroll 4
      for (int r = 0; r < 4; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) acc[r][v] = vdupq_n_f32(0.0f);
    }
    if (len - p >= 4) {
      float32x4_t av[4];
#pragma GCC unroll 4
      for (int r = 0; r < 4; ++r) {
        av[r] = vld1q_f32(ar[r]);
        ar[r] += 4;
      }
      lanes4_4x16(acc, av, bp);
      p += 4;
    }
    for (; p < len; ++p) {  // one k at a time, A broadcast
      float32x4_t av[4];
#pragma GCC unroll 4
      for (int r = 0; r < 4; ++r) av[r] = vdupq_n_f32(*ar[r]++);
      fma_by_lane_4x16<0>(acc, av, bp);
    }
  };
  if (Blocked && kc > gemm_k_block) {  // (a constant false in the one-chain kernel)
    float total[64];  // the blocks before the last, summed in order
    // fold(first): total = acc (first) or total + acc; the next chain starts from zero itself
    auto fold = [&](bool first) __attribute__((always_inline)) {
#pragma GCC unroll 4
      for (int r = 0; r < 4; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) {
          float* t = total + r * 16 + v * 4;
          vst1q_f32(t, first ? acc[r][v] : vaddq_f32(vld1q_f32(t), acc[r][v]));
        }
    };
    chain(gemm_k_block);
    fold(true);
    std::size_t p = gemm_k_block;
    for (; kc - p > gemm_k_block; p += gemm_k_block) {  // every block but the last: 16 steps
      chain(gemm_k_block);
      fold(false);
    }
    chain(kc - p);
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) acc[r][v] = vaddq_f32(vld1q_f32(total + r * 16 + v * 4), acc[r][v]);
  } else {
    chain(kc);
  }

  if (m == 4 && n == 16 && e.plain) {
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) vst1q_f32(c + r * ldc + v * 4, acc[r][v]);
    return;
  }
  store_tile_4x16({{acc[0][0], acc[0][1], acc[0][2], acc[0][3]}},
                  {{acc[1][0], acc[1][1], acc[1][2], acc[1][3]}},
                  {{acc[2][0], acc[2][1], acc[2][2], acc[2][3]}},
                  {{acc[3][0], acc[3][1], acc[3][2], acc[3][3]}}, c, ldc, m, n, e);
}

// A whole panel of op(B) = B: kc rows of 16 floats, ldb apart -> bp[kc][16]. Per row one `ld1`
// of four registers post-incremented by ldb and one `st1` of four: 4 instructions per row with
// the loop's, where GCC made 13 of the portable loop (8 loads and stores, 5 for the addresses).
[[gnu::always_inline]] inline void pack_panel_full(xsimd::neon64, std::size_t kc, const float* b,
                                                   std::size_t ldb, float* bp) noexcept {
  const std::size_t step = ldb * sizeof(float);
  for (const float* const end = bp + kc * 16; bp != end;)
    asm volatile(
        "ld1 {v28.4s, v29.4s, v30.4s, v31.4s}, [%[b]], %[step]\n\t"
        "st1 {v28.4s, v29.4s, v30.4s, v31.4s}, [%[bp]], #64"
        : [b] "+r"(b), [bp] "+r"(bp)
        : [step] "r"(step)
        : "v28", "v29", "v30", "v31", "memory");
}

// The k-blocked tile (GemmOptions::k_blocks), for gemm_panel_blocked.
[[gnu::always_inline]] inline void gemm_ukernel_blocked(xsimd::neon64, std::size_t kc, const float* a,
                                                        std::size_t lda, const float* bp, float* c,
                                                        std::size_t ldc, std::size_t m, std::size_t n,
                                                        const GemmEpilogue& e) noexcept {
  gemm_ukernel_f32_4x16__neon64<true>(kc, a, lda, bp, c, ldc, m, n, e);
}

// Chosen over the portable template by overload resolution on the architecture tag.
[[gnu::always_inline]] inline void gemm_ukernel(xsimd::neon64, std::size_t kc, const float* a, std::size_t lda,
                         const float* bp, float* c, std::size_t ldc, std::size_t m, std::size_t n,
                         const GemmEpilogue& e) noexcept {
  static_assert(gemm_mr == 4 && gemm_nr == 16, "the aarch64 tile is 4 x 16");
  gemm_ukernel_f32_4x16__neon64<false>(kc, a, lda, bp, c, ldc, m, n, e);
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

#endif

// SPDX-License-Identifier: Apache-2.0
#pragma once
// Helium's double-rounding requantization loops for requantize_s8 (requantize_s8.cpp), in asm:
// RequantLanes' arithmetic (requant_arch.hpp: VQRDMULH, gemmlowp's fix-up, VRSHL, + zero
// point), narrowed by two saturating VQMOVNB (int32 -> int16 -> int8, no clamp constants) and
// stored by VSTRB.32. From intrinsics GCC 12 spent 26 instructions per 4 outputs on the
// per-channel loop (the zero point spilled, the pairs' addresses rebuilt) and 14 on the
// per-tensor one; here 18 and 10.
//   tensor_loop   one multiplier, no bias, y contiguous, shift < 0 (every multiplier below 1/2):
//                 the fix-up is x >> 31 alone; DLSTP/LETP predicate the last vector, so it does
//                 all n. Returns n, or 0 where it does not apply.
//   channel_loop_mve  a multiplier and a bias per channel, any shifts; y[j * ldy] (a scatter
//                 store where ldy > 1). VLD20/VLD21 split four {multiplier, shift} pairs; whole
//                 vectors only: returns n - n % 4.
//   channel_rows_mve  the same for three rows at a time (requantize_s8_channels).
// has_mve_loops is false elsewhere, where both are stubs never called.

#include <cstddef>
#include <cstdint>

#include "emha/kernels/requant.hpp"
#include "simd_arch.hpp"

#if EMHA_SIMD && defined(EMHA_SIMD_MVE)
#include <arm_mve.h>
#endif

namespace emha::detail {
inline namespace EMHA_ISA {

#if EMHA_SIMD && defined(EMHA_SIMD_MVE)
inline constexpr bool has_mve_loops = true;

inline std::size_t tensor_loop(std::size_t n, const std::int32_t* acc, QuantizedMultiplier q, std::int32_t zero_point,
                               std::int8_t* y) noexcept {
  if (n == 0 || q.shift >= 0) return 0;
  __asm__ volatile(
      "dlstp.32 lr, %[n]\n"
      "1:\n"
      "vldrw.u32 q0, [%[acc]], #16\n"
      "vqrdmulh.s32 q0, q0, %[m]\n"
      "vshr.s32 q1, q0, #31\n"  // x - 1 where x < 0: VRSHL then rounds half away from zero
      "vqadd.s32 q0, q0, q1\n"
      "vrshl.s32 q0, %[shift]\n"
      "vadd.i32 q0, q0, %[zp]\n"
      "vqmovnb.s32 q0, q0\n"  // lane i's int16 in halfword 2i
      "vqmovnb.s16 q0, q0\n"  // and its int8 in byte 4i, which VSTRB.32 stores
      "vstrb.32 q0, [%[y]], #4\n"
      "letp lr, 1b\n"
      : [acc] "+r"(acc), [y] "+l"(y)  // VSTRB.32 takes a low register
      : [n] "r"(n), [m] "r"(q.multiplier), [shift] "r"(q.shift), [zp] "r"(zero_point)
      : "lr", "q0", "q1", "memory");
  return n;
}

inline std::size_t channel_loop_mve(std::size_t n, const std::int32_t* acc, const std::int32_t* bias,
                                    const QuantizedMultiplier* q, std::int32_t zero_point, std::int8_t* y,
                                    std::size_t ldy) noexcept {
  const std::size_t vectors = n / 4;
  if (vectors == 0) return 0;
  static_assert(sizeof(QuantizedMultiplier) == 8);  // {multiplier, shift}: VLD2's pairs
#define EMHA_MVE_CHANNEL_LOOP(store, ...)                                                                    \
  __asm__ volatile(                                                                                         \
      "vmov.i32 q4, #0\n"                                                                                   \
      "dls lr, %[vectors]\n"                                                                                \
      "1:\n"                                                                                                \
      "vldrw.u32 q0, [%[acc]], #16\n"                                                                       \
      "vldrw.u32 q1, [%[bias]], #16\n"                                                                      \
      "vadd.i32 q0, q0, q1\n"                                                                               \
      "vld20.32 {q2, q3}, [%[q]]\n"                                                                         \
      "vld21.32 {q2, q3}, [%[q]]!\n" /* q2: multipliers, q3: shifts */                                     \
      "vmax.s32 q1, q3, q4\n"        /* max(shift, 0) */                                                    \
      "vmin.s32 q3, q3, q4\n"        /* min(shift, 0) = -right */                                           \
      "vshl.s32 q0, q0, q1\n"                                                                               \
      "vqrdmulh.s32 q0, q0, q2\n"                                                                           \
      "vand q1, q0, q3\n" /* x - 1 where x < 0 and right > 0 */                                             \
      "vshr.s32 q1, q1, #31\n"                                                                              \
      "vqadd.s32 q0, q0, q1\n"                                                                              \
      "vrshl.s32 q0, q0, q3\n"                                                                              \
      "vadd.i32 q0, q0, %[zp]\n"                                                                            \
      "vqmovnb.s32 q0, q0\n"                                                                                \
      "vqmovnb.s16 q0, q0\n" store                                                                          \
      "le lr, 1b\n"                                                                                         \
      : [acc] "+r"(acc), [bias] "+r"(bias), [q] "+r"(q), [y] "+l"(y) /* VSTRB.32 takes a low register */    \
      : [vectors] "r"(vectors), [zp] "r"(zero_point) __VA_ARGS__                                            \
      : "lr", "q0", "q1", "q2", "q3", "q4", "memory")
  if (ldy == 1) {
    EMHA_MVE_CHANNEL_LOOP("vstrb.32 q0, [%[y]], #4\n", );
  } else {  // a scatter store: the lanes' offsets 0, ldy, 2 ldy, 3 ldy
    const uint32x4_t offsets = vmulq_n_u32(vidupq_n_u32(0, 1), std::uint32_t(ldy));
    EMHA_MVE_CHANNEL_LOOP("vstrb.32 q0, [%[y], %q[offsets]]\n"
                          "add %[y], %[y], %[ldy4]\n",
                          , [offsets] "w"(offsets), [ldy4] "r"(4 * ldy));
  }
#undef EMHA_MVE_CHANNEL_LOOP
  return 4 * vectors;
}

// channel_loop_mve's arithmetic for three rows at a time (acc's lda apart, y's y_row apart): a
// vector of channels' bias, multipliers and shifts loaded and split once for the three, 43
// instructions per 12 outputs against 54 where y's rows are contiguous (ldy 1), 46 against 57
// scattered (one pointer stepping from row to row: three would leave GCC too few registers).
// Whole vectors: returns n - n % 4.
inline std::size_t channel_rows_mve(std::size_t n, const std::int32_t* acc, std::size_t lda, const std::int32_t* bias,
                                    const QuantizedMultiplier* q, std::int32_t zero_point, std::int8_t* y,
                                    std::size_t y_row, std::size_t ldy) noexcept {
  const std::size_t vectors = n / 4;
  if (vectors == 0) return 0;
  const std::int32_t *acc1 = acc + lda, *acc2 = acc + 2 * lda;
  const int32x4_t zp = vdupq_n_s32(zero_point);
// One row's vector: q0 = acc + bias (q5) requantized by q2, q6 (left) and q3 (-right), + zero
// point, then `store`.
#define EMHA_MVE_ROW(acc, store)       \
  "vldrw.u32 q0, [%[" acc "]], #16\n" \
  "vadd.i32 q0, q0, q5\n"             \
  "vshl.s32 q0, q0, q6\n"             \
  "vqrdmulh.s32 q0, q0, q2\n"         \
  "vand q1, q0, q3\n"                 \
  "vshr.s32 q1, q1, #31\n"            \
  "vqadd.s32 q0, q0, q1\n"            \
  "vrshl.s32 q0, q0, q3\n"            \
  "vadd.i32 q0, q0, %q[zp]\n"         \
  "vqmovnb.s32 q0, q0\n"              \
  "vqmovnb.s16 q0, q0\n" store
#define EMHA_MVE_COMMA(...) __VA_ARGS__
#define EMHA_MVE_ROWS(store0, store1, store2, outputs, ...)                                              \
  __asm__ volatile("dls lr, %[vectors]\n"                                                               \
                   "1:\n"                                                                               \
                   "vldrw.u32 q5, [%[bias]], #16\n"                                                     \
                   "vld20.32 {q2, q3}, [%[q]]\n"                                                        \
                   "vld21.32 {q2, q3}, [%[q]]!\n" /* q2: multipliers, q3: shifts */                    \
                   "vmov.i32 q1, #0\n"                                                                  \
                   "vmax.s32 q6, q3, q1\n" /* max(shift, 0) */                                          \
                   "vmin.s32 q3, q3, q1\n" /* min(shift, 0) = -right */                                 \
                   EMHA_MVE_ROW("a0", store0) EMHA_MVE_ROW("a1", store1) EMHA_MVE_ROW("a2", store2)      \
                   "le lr, 1b\n"                                                                        \
                   : [a0] "+r"(acc), [a1] "+r"(acc1), [a2] "+r"(acc2), [bias] "+r"(bias), [q] "+r"(q),  \
                     outputs                                                                            \
                   : [vectors] "r"(vectors), [zp] "w"(zp)__VA_ARGS__                                    \
                   : "lr", "q0", "q1", "q2", "q3", "q5", "q6", "memory")
  if (ldy == 1) {
    std::int8_t *y1 = y + y_row, *y2 = y + 2 * y_row;
    EMHA_MVE_ROWS("vstrb.32 q0, [%[y0]], #4\n", "vstrb.32 q0, [%[y1]], #4\n", "vstrb.32 q0, [%[y2]], #4\n",
                  EMHA_MVE_COMMA([y0] "+l"(y), [y1] "+l"(y1), [y2] "+l"(y2)), );  // VSTRB.32: low registers
  } else {  // a scatter store: the lanes' offsets 0, ldy, 2 ldy, 3 ldy; y to the next row, and
    // after the third to the first's next vector
    const uint32x4_t offsets = vmulq_n_u32(vidupq_n_u32(0, 1), std::uint32_t(ldy));
    const std::size_t back = 4 * ldy - 2 * y_row;
#define EMHA_MVE_SCATTER(step) "vstrb.32 q0, [%[y], %q[offsets]]\nadd %[y], %[y], %[" step "]\n"
    EMHA_MVE_ROWS(EMHA_MVE_SCATTER("y_row"), EMHA_MVE_SCATTER("y_row"), EMHA_MVE_SCATTER("back"), [y] "+l"(y),
                  , [offsets] "w"(offsets), [y_row] "r"(y_row), [back] "r"(back));
#undef EMHA_MVE_SCATTER
  }
#undef EMHA_MVE_ROWS
#undef EMHA_MVE_COMMA
#undef EMHA_MVE_ROW
  return 4 * vectors;
}
#else
inline constexpr bool has_mve_loops = false;
inline std::size_t tensor_loop(std::size_t, const std::int32_t*, QuantizedMultiplier, std::int32_t,
                               std::int8_t*) noexcept {
  return 0;  // never called: requantize_s8.cpp tests has_mve_loops
}
inline std::size_t channel_loop_mve(std::size_t, const std::int32_t*, const std::int32_t*, const QuantizedMultiplier*,
                                    std::int32_t, std::int8_t*, std::size_t) noexcept {
  return 0;
}
inline std::size_t channel_rows_mve(std::size_t, const std::int32_t*, std::size_t, const std::int32_t*,
                                    const QuantizedMultiplier*, std::int32_t, std::int8_t*, std::size_t,
                                    std::size_t) noexcept {
  return 0;
}
#endif

}  // namespace EMHA_ISA
}  // namespace emha::detail

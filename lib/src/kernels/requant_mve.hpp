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
//   channel_loop  a multiplier and a bias per channel, any shifts; y[j * ldy] (a scatter store
//                 where ldy > 1). VLD20/VLD21 split four {multiplier, shift} pairs; whole
//                 vectors only: returns n - n % 4.
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
#endif

}  // namespace EMHA_ISA
}  // namespace emha::detail

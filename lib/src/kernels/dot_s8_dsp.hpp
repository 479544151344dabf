// SPDX-License-Identifier: Apache-2.0
#pragma once
// DotS8 (dot_s8_arch.hpp's contract) for the DSP extension (Cortex-M4/M7, armv6): SXTB16 + SMLAD,
// two int8 pairs an instruction; 2 x 2 blocks over a's rows widened once (widen_2, blocks_2x2),
// and gemm_s8_staged's 4 to 6 rows widened into the caller's stage (widen_stage, blocks_stage),
// the loops over b's rows in asm. Included by dot_s8_arch.hpp where the core has the DSP
// instructions and neither NEON nor Helium.

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "simd_arch.hpp"

#include <arm_acle.h>

namespace emha::detail {
inline namespace EMHA_ISA {

// The frame pointer (r7 in Thumb, r11 in ARM state: armv6), which an unoptimized build keeps and
// asm may not clobber: blocks_2x2 needs every core register but sp and pc, so it saves that one
// itself and names the other as clobbered.
#if defined(__thumb__)
#define EMHA_DSP_FP "r7"
#define EMHA_DSP_OTHER "r11"
#else
#define EMHA_DSP_FP "r11"
#define EMHA_DSP_OTHER "r7"
#endif
// Both block loops' last lines: the next block while c (r8) is short of c_end (the state's word
// 7), then the saved registers back; and the registers they clobber.
#define EMHA_DSP_NEXT      \
  "ldr r9, [r12, #24]\n"   \
  "cmp r8, r9\n"           \
  "bne 0b\n"               \
  "pop {" EMHA_DSP_FP ", r12}\n"
#define EMHA_DSP_CLOBBERS \
  "r0", "r1", "r2", "r3", "r4", "r5", "r6", EMHA_DSP_OTHER, "r8", "r9", "r10", "lr", "cc", "memory"
struct DotS8 {
  static constexpr std::size_t rows = 2;  // 2 x 2 blocks: 4 loads and 4 SXTB16 per 8 SMLAD
  static constexpr std::size_t cols = 2;
  static constexpr std::size_t step = 4;
  static constexpr bool offset = false;
  struct in {
    int16x2_t even, odd;  // bytes 0 and 2, bytes 1 and 3, sign-extended
  };
  using acc = std::int32_t;
  static acc zero() noexcept { return 0; }
  static in load(const std::int8_t* p) noexcept {
    std::uint32_t w;
    std::memcpy(&w, p, sizeof w);
    int16x2_t odd;  // SXTB16 with its ROR #8: GCC 12 does not fold __sxtb16(__ror(w, 8)) into one
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(odd) : "r"(w));
    return {__sxtb16(static_cast<int8x4_t>(w)), odd};
  }
  static acc madd(acc s, in a, in b) noexcept { return __smlad(a.odd, b.odd, __smlad(a.even, b.even, s)); }
  static std::int32_t sum(acc s) noexcept { return s; }
  // Two rows of a sign-extended once for every row of b, `quads` steps of 4 int8 from x0 and x1:
  // w[4 i .. 4 i + 3] = x0's even and odd pairs, x1's (load's two int16x2_t each).
  using widened = int16x2_t;
  static constexpr std::size_t widen_quads = 16;  // per call at most: 256 bytes of w on the stack
  static void widen_2(const std::int8_t* x0, const std::int8_t* x1, std::size_t quads, widened* w) noexcept {
    for (std::size_t i = 0; i < quads; ++i, x0 += step, x1 += step, w += 4) {
      const in u = load(x0), v = load(x1);
      w[0] = u.even, w[1] = u.odd, w[2] = v.even, w[3] = v.odd;
    }
  }
  // c[r][j] (+)= x_r . b_j over `quads` >= 1 steps, for the rows x0, x1 widened in w (widen_2)
  // and the rows b_j of `blocks` blocks of two (ldb bytes apart, the next block 2 ldb on); c's
  // rows ldc int32 apart, j < 2 blocks; `add`: add to c, else store. A step is 2 LDRD (both rows'
  // pairs), 2 LDR and 4 SXTB16 for 8 SMLAD; two steps a loop turn. In asm, the whole loop over
  // blocks (Thumb-2 and ARM state alike): the sums, pointers, the loop's end and the operands
  // take 14 registers, the frame pointer and r12 among them (both pushed); the loop's state lives
  // in `at`, which r12 holds outside the steps. From intrinsics GCC 12 spilled a pointer and the
  // loop's end every step and kept the blocks' state on the stack (25 instructions a step, about
  // 60 a block).
  [[gnu::always_inline]] static void blocks_2x2(const widened* w, std::size_t quads, const std::int8_t* b, std::size_t ldb,
                         std::int32_t* c, std::size_t ldc, std::size_t blocks, bool add) noexcept {
    struct State {
      const widened* w;
      const std::int8_t* b;
      std::size_t ldb;
      const widened* w_end;
      std::int32_t* c;
      std::size_t ldc_bytes;
      const std::int32_t* c_end;  // the first row's sums past the last block
      std::size_t add;
    } state{w, b, ldb, w + 4 * quads, c, ldc * sizeof(std::int32_t), c + 2 * blocks, add};
    static_assert(offsetof(State, b) == 4 && offsetof(State, w_end) == 12 && offsetof(State, c) == 16 &&
                  offsetof(State, c_end) == 24 && offsetof(State, add) == 28);  // the asm's offsets
    register State* at __asm__("r12") = &state;
// One step: x0's and x1's pairs (r8, r9 and r10, r11: LDRD's even-odd pairs, as ARM state
// requires), b_0's and b_1's words sign-extended (lr, r12).
#define EMHA_DSP_STEP          \
  "ldrd r10, r11, [r4, #8]\n"  \
  "ldrd r8, r9, [r4], #16\n"   \
  "ldr r12, [r5], #4\n"        \
  "sxtb16 lr, r12\n"           \
  "sxtb16 r12, r12, ror #8\n"  \
  "smlad r0, r8, lr, r0\n"     \
  "smlad r0, r9, r12, r0\n"    \
  "smlad r2, r10, lr, r2\n"    \
  "smlad r2, r11, r12, r2\n"   \
  "ldr r12, [r6], #4\n"        \
  "sxtb16 lr, r12\n"           \
  "sxtb16 r12, r12, ror #8\n"  \
  "smlad r1, r8, lr, r1\n"     \
  "smlad r1, r9, r12, r1\n"    \
  "smlad r3, r10, lr, r3\n"    \
  "smlad r3, r11, r12, r3\n"
    __asm__ volatile(
        EMHA_ASM_STACK(8) "push {" EMHA_DSP_FP ", r12}\n"  // r12 (the state) at [sp, #4]
        "0:\n"
        "ldr r4, [r12, #0]\n"       // x's pairs
        "ldrd r8, r9, [r12, #4]\n"  // b, ldb
        "mov r5, r8\n"              // b_0
        "add r6, r8, r9\n"          // b_1
        "add r8, r6, r9\n"          // the next block's b
        "str r8, [r12, #4]\n"
        "ldr r7, [r12, #12]\n"  // the pairs' end
        "ldr r8, [r12, #28]\n"
        "cmp r8, #0\n"
        "beq 1f\n"
        "ldrd r8, r9, [r12, #16]\n"  // c, ldc in bytes: add to c's sums
        "ldrd r0, r1, [r8]\n"
        "add r8, r8, r9\n"
        "ldrd r2, r3, [r8]\n"
        "b 2f\n"
        "1:\n"
        "movs r0, #0\n"
        "movs r1, #0\n"
        "movs r2, #0\n"
        "movs r3, #0\n"
        "2:\n"
        "sub r8, r7, r4\n"
        "tst r8, #16\n"  // an odd number of steps: enter at the turn's second
        "bne 4f\n"
        "3:\n" EMHA_DSP_STEP
        "4:\n" EMHA_DSP_STEP
        "cmp r4, r7\n"
        "bne 3b\n"
        "ldr r12, [sp, #4]\n"
        "ldrd r8, r9, [r12, #16]\n"  // c, ldc in bytes
        "strd r0, r1, [r8]\n"
        "add r10, r8, r9\n"
        "strd r2, r3, [r10]\n"
        "add r8, r8, #8\n"
        "str r8, [r12, #16]\n"
        EMHA_DSP_NEXT
        : "+r"(at)
        :
        : EMHA_DSP_CLOBBERS);
#undef EMHA_DSP_STEP
  }
  // gemm_s8_staged's rows (emha/kernels/gemm_s8.hpp): R of 4, 5 or stage_rows (6) rows of a
  // widened once into the caller's stage, for every row of b; a step is R LDRD, 1 LDR and 2 SXTB16
  // for 2 R SMLAD.
  static constexpr std::size_t stage_rows = 6;
  // w[2 (R i + r)], w[2 (R i + r) + 1] = row r's (x_r = a + r lda) even and odd pairs of step i,
  // for i < quads, r < R (memcpy: the stage is the caller's int16 buffer).
  template <std::size_t R>
  static void widen_stage(const std::int8_t* a, std::size_t lda, std::size_t quads, widened* w) noexcept {
    for (std::size_t i = 0; i < quads; ++i)
      for (std::size_t r = 0; r < R; ++r, w += 2) {
        const in v = load(a + r * lda + i * step);
        std::memcpy(w, &v.even, sizeof v.even);
        std::memcpy(w + 1, &v.odd, sizeof v.odd);
      }
  }
  // c[r][j] = x_r . b_j over `quads` >= 2 steps, for the R rows widened in w (widen_stage) and
  // the n >= 1 rows b_j of b (ldb bytes apart), c's rows ldc int32 apart. In asm, the loop over
  // b's rows (Thumb-2 and ARM state alike): R sums (r0-r5), w and its end (r6, r7), a row's pairs
  // (r8, r9), b_j and its word sign-extended (r10; lr, r12), the odd-count flag (r11); the state
  // lives in `at`, which r12 holds outside the steps. The first step starts the sums (SMUAD).
  template <std::size_t R>
  static void blocks_stage(const widened* w, std::size_t quads, const std::int8_t* b, std::size_t ldb,
                           std::int32_t* c, std::size_t ldc, std::size_t n) noexcept {
    static_assert(R >= 4 && R <= stage_rows);
    struct State {
      const widened* w;
      const std::int8_t* b;
      std::size_t b_next;  // from b_j's end to b_(j+1)
      const widened* w_end;
      std::int32_t* c;
      std::size_t ldc_bytes;
      const std::int32_t* c_end;  // the first row's sums past the last
      std::size_t odd;
    } state{w, b, ldb - step * quads, w + 2 * R * quads, c, ldc * sizeof(std::int32_t), c + n, (quads - 1) % 2};
    static_assert(offsetof(State, b) == 4 && offsetof(State, w_end) == 12 && offsetof(State, c) == 16 &&
                  offsetof(State, c_end) == 24 && offsetof(State, odd) == 28);  // the asm's offsets
    register State* at __asm__("r12") = &state;
// One row's pairs (r8, r9) times b_j's (lr, r12) into its sum; the first step's starts it.
#define EMHA_DSP_ROW(acc)      \
  "ldrd r8, r9, [r6], #8\n"   \
  "smlad " acc ", r8, lr, " acc "\n" \
  "smlad " acc ", r9, r12, " acc "\n"
#define EMHA_DSP_FIRST(acc) \
  "ldrd r8, r9, [r6], #8\n"   \
  "smuad " acc ", r8, lr\n" \
  "smlad " acc ", r9, r12, " acc "\n"
#define EMHA_DSP_ROWS_4(ROW) ROW("r0") ROW("r1") ROW("r2") ROW("r3")
#define EMHA_DSP_ROWS_5(ROW) EMHA_DSP_ROWS_4(ROW) ROW("r4")
#define EMHA_DSP_ROWS_6(ROW) EMHA_DSP_ROWS_5(ROW) ROW("r5")
// The sums to c_j's rows: r8 c_j, r9 ldc in bytes.
#define EMHA_DSP_STORE_4        \
  "add lr, r8, r9, lsl #1\n"  \
  "str r1, [r8, r9]\n"        \
  "str r2, [lr]\n"            \
  "str r3, [lr, r9]\n"
#define EMHA_DSP_STORE_5 EMHA_DSP_STORE_4 \
  "add lr, lr, r9, lsl #1\n"  \
  "str r4, [lr]\n"
#define EMHA_DSP_STORE_6 EMHA_DSP_STORE_5 "str r5, [lr, r9]\n"
#define EMHA_DSP_STEP(ROWS, ROW) \
  "ldr r12, [r10], #4\n"        \
  "sxtb16 lr, r12\n"            \
  "sxtb16 r12, r12, ror #8\n" ROWS(ROW)
#define EMHA_DSP_STAGED(ROWS, STORE)                                                              \
  __asm__ volatile(EMHA_ASM_STACK(8) "push {" EMHA_DSP_FP ", r12}\n" /* r12 (the state) at [sp, #4] */ \
                   "ldr r10, [r12, #4]\n"          /* b_0 */                                      \
                   "ldr r7, [r12, #12]\n"          /* the pairs' end */                           \
                   "ldr r11, [r12, #28]\n" /* an odd number after the first: the turn's second */ \
                   "0:\n"                                                                         \
                   "ldr r6, [r12, #0]\n" EMHA_DSP_STEP(ROWS, EMHA_DSP_FIRST)                      \
                   "cmp r11, #0\n"                                                                \
                   "bne 4f\n"                                                                     \
                   "3:\n" EMHA_DSP_STEP(ROWS, EMHA_DSP_ROW)                                       \
                   "4:\n" EMHA_DSP_STEP(ROWS, EMHA_DSP_ROW)                                       \
                   "cmp r6, r7\n"                                                                 \
                   "bne 3b\n"                                                                     \
                   "ldr r12, [sp, #4]\n"                                                          \
                   "ldrd r8, r9, [r12, #16]\n" /* c_j, ldc in bytes */ STORE                      \
                   "str r0, [r8], #4\n"                                                           \
                   "str r8, [r12, #16]\n"                                                         \
                   "ldr r9, [r12, #8]\n" /* b_(j+1) */                                            \
                   "add r10, r10, r9\n" EMHA_DSP_NEXT                                             \
                   : "+r"(at)                                                                     \
                   :                                                                              \
                   : EMHA_DSP_CLOBBERS)
    if constexpr (R == 4)
      EMHA_DSP_STAGED(EMHA_DSP_ROWS_4, EMHA_DSP_STORE_4);
    else if constexpr (R == 5)
      EMHA_DSP_STAGED(EMHA_DSP_ROWS_5, EMHA_DSP_STORE_5);
    else
      EMHA_DSP_STAGED(EMHA_DSP_ROWS_6, EMHA_DSP_STORE_6);
#undef EMHA_DSP_STAGED
#undef EMHA_DSP_STEP
#undef EMHA_DSP_STORE_6
#undef EMHA_DSP_STORE_5
#undef EMHA_DSP_STORE_4
#undef EMHA_DSP_ROWS_6
#undef EMHA_DSP_ROWS_5
#undef EMHA_DSP_ROWS_4
#undef EMHA_DSP_FIRST
#undef EMHA_DSP_ROW
  }
};
#undef EMHA_DSP_FP
#undef EMHA_DSP_OTHER
#undef EMHA_DSP_NEXT
#undef EMHA_DSP_CLOBBERS

}  // namespace EMHA_ISA
}  // namespace emha::detail

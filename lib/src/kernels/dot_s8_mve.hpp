// SPDX-License-Identifier: Apache-2.0
#pragma once
// DotS8 (dot_s8_arch.hpp's contract) for Cortex-M55's Helium: VMLADAVA.S8 sums 16 int8 products
// into one core register; 2 x 4 blocks up to 16 steps (blocks_2x4), else 2 x 3 (blocks_2x3), each
// loop over blocks in asm. Included by dot_s8_arch.hpp where EMHA_SIMD_MVE is set.

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "simd_arch.hpp"

#include <arm_mve.h>

namespace emha::detail {
inline namespace EMHA_ISA {

struct DotS8 {
  static constexpr std::size_t rows = 2;  // 2 x 3 blocks (2 x 4 in blocks_2x4): VMLADAVA's sums
  static constexpr std::size_t cols = 3;  // in even core registers
  static constexpr std::size_t step = 16;
  static constexpr bool offset = false;
  using in = int8x16_t;
  using acc = std::int32_t;
  static acc zero() noexcept { return 0; }
  static in load(const std::int8_t* p) noexcept {  // memcpy: one VLDRB, and no aliasing assumption
    in v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
  }
  static acc madd(acc s, in a, in b) noexcept { return vmladavaq_s8(s, a, b); }
  static std::int32_t sum(acc s) noexcept { return s; }
  // Rows x0 = a, x1 = a + lda of a against `blocks` blocks of three rows of b (ldb bytes apart,
  // the next block 3 ldb on), over the first 16 `steps` int8 of each (steps >= 1): c[r][j] =
  // x_r . b_j for j < 3 blocks, c's rows ldc int32 apart. In asm, the whole loop over blocks:
  // VMLADAVA writes an even core register, its six sums and the five pointers take every
  // register but r12 and lr, and from intrinsics GCC 12 kept the loop's state on the stack (about
  // 60 instructions a block besides the 12 of a step). Here a block's own are 18: the first step
  // by VMLADAV, which needs no zeroed sums; the next block's b from where the last row's pointer
  // stopped; 4 stores (STRD); the block loop ends at c_end. The steps after the first go two a
  // loop iteration (one LE per 22 instructions), an odd one before them. The state lives in
  // `at`, which r12 holds.
  static void blocks_2x3(std::size_t blocks, std::size_t steps, const std::int8_t* a, std::size_t lda,
                         const std::int8_t* b, std::size_t ldb, std::int32_t* c, std::size_t ldc) noexcept {
    struct State {
      const std::int8_t *x0, *x1, *before;  // before: b - delta, where a block before b would end
      std::size_t delta, ldb, pairs;         // delta: ldb - 16 steps; pairs: (steps - 1) / 2
      std::int32_t* c;
      std::size_t ldc_bytes;
      const std::int32_t* c_end;  // c past the last block
    };
    const std::size_t delta = ldb - 16 * steps;
    State state{a, a + lda, b - delta, delta, ldb, (steps - 1) / 2, c, ldc * sizeof(std::int32_t), c + 3 * blocks};
    static_assert(offsetof(State, delta) == 12 && offsetof(State, pairs) == 20 && offsetof(State, c) == 24 &&
                  offsetof(State, c_end) == 32);  // the asm's offsets
    register State* at __asm__("r12") = &state;
// One step of 16: a's two rows against the block's three of b, by op (VMLADAV: the first).
#define EMHA_MVE_STEP(op)         \
  "vldrb.8 q0, [r1], #16\n"       \
  "vldrb.8 q1, [r3], #16\n"       \
  "vldrb.8 q2, [r5], #16\n"       \
  op ".s8 r0, q2, q0\n"           \
  op ".s8 r6, q2, q1\n"           \
  "vldrb.8 q2, [r11], #16\n"      \
  op ".s8 r2, q2, q0\n"           \
  op ".s8 r8, q2, q1\n"           \
  "vldrb.8 q2, [r9], #16\n"       \
  op ".s8 r4, q2, q0\n"           \
  op ".s8 r10, q2, q1\n"
#define EMHA_MVE_BLOCKS(odd_step)                                                                      \
  __asm__ volatile("ldr r9, [r12, #8]\n" /* as if a block had ended before b */                       \
                   "0:\n"                                                                              \
                   "ldrd r1, r3, [r12, #0]\n"  /* x0, x1 */                                            \
                   "ldrd r5, lr, [r12, #12]\n" /* delta, ldb */                                        \
                   "add r5, r9, r5\n"          /* y0: the last block's y2 end + delta */               \
                   "add r11, r5, lr\n"         /* y1 */                                                \
                   "add r9, r11, lr\n"         /* y2 */                                                \
                   EMHA_MVE_STEP("vmladav") odd_step                                                   \
                   "ldr lr, [r12, #20]\n" /* pairs of steps */                                         \
                   "wls lr, lr, 2f\n"                                                                  \
                   "1:\n" EMHA_MVE_STEP("vmladava") EMHA_MVE_STEP("vmladava")                          \
                   "le lr, 1b\n"                                                                       \
                   "2:\n"                                                                              \
                   "ldrd r1, r3, [r12, #24]\n" /* c, ldc in bytes */                                   \
                   "strd r0, r2, [r1]\n"                                                               \
                   "str r4, [r1, #8]\n"                                                                \
                   "add r3, r3, r1\n" /* c's second row */                                             \
                   "strd r6, r8, [r3]\n"                                                               \
                   "str r10, [r3, #8]\n"                                                               \
                   "add r1, r1, #12\n" /* the next block's c */                                        \
                   "str r1, [r12, #24]\n"                                                              \
                   "ldr lr, [r12, #32]\n"                                                              \
                   "cmp r1, lr\n"                                                                      \
                   "bne 0b\n"                                                                          \
                   : "+r"(at)                                                                          \
                   :                                                                                   \
                   : "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r8", "r9", "r10", "r11", "lr", "q0", "q1", \
                     "q2", "cc", "memory")
    if ((steps - 1) % 2)
      EMHA_MVE_BLOCKS(EMHA_MVE_STEP("vmladava"));
    else
      EMHA_MVE_BLOCKS("");
#undef EMHA_MVE_BLOCKS
#undef EMHA_MVE_STEP
  }

  // blocks_2x4's most steps: its asm has the steps after the first unrolled (no register is left
  // for a loop counter), 15 of them, 56 bytes each.
  static constexpr std::size_t wide_steps = 16;
  // blocks_2x3's contract for blocks of four rows of b (the next block 4 ldb on), steps in
  // [1, wide_steps], then where back > 0 one more block `back` rows of b (1 to 3) before where
  // the next would begin (overlapping the last: n % 4 rows of b past the whole blocks, the
  // others' sums written again, the same values). Its eight sums take every even core register,
  // lr too, and its six pointers every odd one, r7 saved and restored here (GCC may keep its
  // frame pointer there); the state lives on the stack. A block's own instructions are 18 (4 STRD), its steps 14 (6 loads, 8
  // VMLADAVA): per sum 2.25 and 1.75 against blocks_2x3's 3.7 and 1.83. The first step is
  // VMLADAV; LDR PC then enters the unrolled VMLADAVA steps where steps - 1 of them are left.
  static void blocks_2x4(std::size_t blocks, std::size_t back, std::size_t steps, const std::int8_t* a,
                         std::size_t lda, const std::int8_t* b, std::size_t ldb, std::int32_t* c,
                         std::size_t ldc) noexcept {
    struct State {  // the first seven words are pushed as they are, the entry and back after them
      const std::int8_t *x0, *x1;
      std::size_t delta, ldb;  // delta: ldb - 16 steps
      std::int32_t* c;
      std::size_t ldc_bytes;
      const std::int32_t* c_end;  // c past the last block
      std::size_t skipped;        // the unrolled steps' bytes not run: 56 (wide_steps - steps)
      std::size_t back;
      const std::int8_t* before;  // b - delta, where a block before b would end
    };
    const std::size_t delta = ldb - 16 * steps;
    State state{a, a + lda, delta, ldb, c, ldc * sizeof(std::int32_t), c + 4 * blocks,
                56 * (wide_steps - steps), back, b - delta};
    static_assert(offsetof(State, skipped) == 28 && offsetof(State, before) == 36);  // the asm's offsets
    register State* at __asm__("r0") = &state;
// One step of 16: a's two rows against the block's four of b, by op (VMLADAV: the first); 56 bytes.
#define EMHA_MVE_STEP4(op)    \
  "vldrb.8 q0, [r1], #16\n"   \
  "vldrb.8 q1, [r3], #16\n"   \
  "vldrb.8 q2, [r5], #16\n"   \
  op ".s8 r0, q2, q0\n"       \
  op ".s8 r8, q2, q1\n"       \
  "vldrb.8 q2, [r7], #16\n"   \
  op ".s8 r2, q2, q0\n"       \
  op ".s8 r10, q2, q1\n"      \
  "vldrb.8 q2, [r9], #16\n"   \
  op ".s8 r4, q2, q0\n"       \
  op ".s8 r12, q2, q1\n"      \
  "vldrb.8 q2, [r11], #16\n"  \
  op ".s8 r6, q2, q0\n"       \
  op ".s8 lr, q2, q1\n"
    __asm__ volatile(
        EMHA_ASM_STACK(40)
        "push {r7}\n"
        "ldr r11, [r0, #36]\n" /* as if a block had ended before b */
        "ldr r1, [r0, #28]\n"
        "adr.w r2, 2f\n"
        "add r10, r2, r1\n"
        "orr r10, r10, #1\n" /* the entry, a Thumb address */
        "ldr r12, [r0, #32]\n"
        "ldm r0, {r2, r3, r4, r5, r6, r8, r9}\n"
        "push {r2, r3, r4, r5, r6, r8, r9, r10, r12}\n" /* sp: x0 x1 delta ldb c ldc_bytes c_end entry back */
        "0:\n"
        "ldrd r1, r3, [sp, #8]\n" /* delta, ldb */
        "add r5, r11, r1\n"        /* y0: the last block's y3 end + delta */
        "add r7, r5, r3\n"
        "add r9, r7, r3\n"
        "add r11, r9, r3\n"
        "ldrd r1, r3, [sp, #0]\n" /* x0, x1 */
        EMHA_MVE_STEP4("vmladav")
        "ldr pc, [sp, #28]\n"
        "2:\n"
        ".rept 15\n" EMHA_MVE_STEP4("vmladava") ".endr\n"
        "3:\n"
        ".if 3b - 2b - 15 * 56\n"
        ".error \"blocks_2x4: a step is not 56 bytes\"\n"
        ".endif\n"
        "ldrd r1, r3, [sp, #16]\n" /* c, ldc in bytes */
        "strd r0, r2, [r1]\n"
        "strd r4, r6, [r1, #8]\n"
        "add r3, r3, r1\n" /* c's second row */
        "strd r8, r10, [r3]\n"
        "strd r12, lr, [r3, #8]\n"
        "add r1, r1, #16\n" /* the next block's c */
        "str r1, [sp, #16]\n"
        "ldr r3, [sp, #24]\n"
        "cmp r1, r3\n"
        "bne 0b\n"
        "ldr r3, [sp, #32]\n" /* back */
        "cbz r3, 4f\n"
        "movs r2, #0\n"
        "str r2, [sp, #32]\n" /* once */
        "ldr r2, [sp, #12]\n"
        "mls r11, r3, r2, r11\n"     /* b back rows */
        "sub r1, r1, r3, lsl #2\n"   /* c back columns */
        "str r1, [sp, #16]\n"
        "add r3, r1, #16\n"
        "str r3, [sp, #24]\n" /* one block */
        "b 0b\n"
        "4:\n"
        "add sp, sp, #36\n"
        "pop {r7}\n"
        : "+r"(at)
        :
        : "r1", "r2", "r3", "r4", "r5", "r6", "r8", "r9", "r10", "r11", "r12", "lr", "q0", "q1", "q2", "cc",
          "memory");
#undef EMHA_MVE_STEP4
  }
};

}  // namespace EMHA_ISA
}  // namespace emha::detail

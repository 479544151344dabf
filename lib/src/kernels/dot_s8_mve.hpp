// SPDX-License-Identifier: Apache-2.0
#pragma once
// DotS8 (dot_s8_arch.hpp's contract) for Cortex-M55's Helium: VMLADAVA.S8 sums 16 int8 products
// into one core register; 2 x 3 blocks, their loop over blocks in asm (blocks_2x3). Included by
// dot_s8_arch.hpp where EMHA_SIMD_MVE is set.

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "simd_arch.hpp"

#include <arm_mve.h>

namespace emha::detail {
inline namespace EMHA_ISA {

struct DotS8 {
  static constexpr std::size_t rows = 2;  // 2 x 3 blocks: VMLADAVA's sums in six even core registers
  static constexpr std::size_t cols = 3;
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
  // 60 instructions a block besides the 12 of a step). Here a block's own are 19: the first step
  // by VMLADAV, which needs no zeroed sums; 4 stores (STRD); the block loop ends at c_end. The
  // state lives in `at`, which r12 holds.
  static void blocks_2x3(std::size_t blocks, std::size_t steps, const std::int8_t* a, std::size_t lda,
                         const std::int8_t* b, std::size_t ldb, std::int32_t* c, std::size_t ldc) noexcept {
    struct State {
      const std::int8_t *x0, *x1, *b;
      std::size_t ldb, more_steps;  // steps - 1: the loop's, after the first
      std::int32_t* c;
      std::size_t ldc_bytes;
      const std::int32_t* c_end;  // c past the last block
    } state{a, a + lda, b, ldb, steps - 1, c, ldc * sizeof(std::int32_t), c + 3 * blocks};
    static_assert(offsetof(State, b) == 8 && offsetof(State, more_steps) == 16 && offsetof(State, c) == 20 &&
                  offsetof(State, c_end) == 28);  // the asm's offsets
    register State* at __asm__("r12") = &state;
    __asm__ volatile(
        "0:\n"
        "ldrd r1, r3, [r12, #0]\n"  // x0, x1
        "ldrd r5, lr, [r12, #8]\n"  // y0 = b, ldb
        "add r11, r5, lr\n"         // y1
        "add r9, r11, lr\n"         // y2
        "add lr, r9, lr\n"          // the next block's b
        "str lr, [r12, #8]\n"
        "vldrb.8 q0, [r1], #16\n"  // the first step: VMLADAV sets the sums
        "vldrb.8 q1, [r3], #16\n"
        "vldrb.8 q2, [r5], #16\n"
        "vmladav.s8 r0, q2, q0\n"
        "vmladav.s8 r6, q2, q1\n"
        "vldrb.8 q2, [r11], #16\n"
        "vmladav.s8 r2, q2, q0\n"
        "vmladav.s8 r8, q2, q1\n"
        "vldrb.8 q2, [r9], #16\n"
        "vmladav.s8 r4, q2, q0\n"
        "vmladav.s8 r10, q2, q1\n"
        "ldr lr, [r12, #16]\n"  // the steps after the first
        "wls lr, lr, 2f\n"
        "1:\n"
        "vldrb.8 q0, [r1], #16\n"
        "vldrb.8 q1, [r3], #16\n"
        "vldrb.8 q2, [r5], #16\n"
        "vmladava.s8 r0, q2, q0\n"
        "vmladava.s8 r6, q2, q1\n"
        "vldrb.8 q2, [r11], #16\n"
        "vmladava.s8 r2, q2, q0\n"
        "vmladava.s8 r8, q2, q1\n"
        "vldrb.8 q2, [r9], #16\n"
        "vmladava.s8 r4, q2, q0\n"
        "vmladava.s8 r10, q2, q1\n"
        "le lr, 1b\n"
        "2:\n"
        "ldrd r1, r3, [r12, #20]\n"  // c, ldc in bytes
        "strd r0, r2, [r1]\n"
        "str r4, [r1, #8]\n"
        "add r3, r3, r1\n"  // c's second row
        "strd r6, r8, [r3]\n"
        "str r10, [r3, #8]\n"
        "add r1, r1, #12\n"  // the next block's c
        "str r1, [r12, #20]\n"
        "ldr lr, [r12, #28]\n"
        "cmp r1, lr\n"
        "bne 0b\n"
        : "+r"(at)
        :
        : "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r8", "r9", "r10", "r11", "lr", "q0", "q1", "q2", "cc",
          "memory");
  }
};

}  // namespace EMHA_ISA
}  // namespace emha::detail

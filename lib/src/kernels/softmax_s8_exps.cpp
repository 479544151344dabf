// SPDX-License-Identifier: Apache-2.0
// softmax_s8_exps (emha/kernels/softmax_s8.hpp): a row's max, its exps looked up and their sum.
// Helium: the max 16 bytes a VMAXV, the lookups 4 lanes a gather (VLDRB.S32 widening the bytes
// to offsets), the sum VADDVA, the last vector predicated, in asm; elsewhere two loops the compiler
// vectorizes where it can. Each exp's rescale to Q12.19 is (e + 2^11) >> 12 in unsigned
// arithmetic: the table's entries lie in [0, 2^31), where TFLite's rounding half away from zero
// is half up (no overflow, no sign test). Integer arithmetic: the reference's values.

#include "emha/kernels/softmax_s8.hpp"
#include "isa_kernels.hpp"
#include "simd_arch.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

namespace {
constexpr int bits = softmax_s8_sum_bits;
constexpr std::uint32_t half = 1u << (bits - 1);

#if EMHA_SIMD && defined(EMHA_SIMD_MVE)
// Both loops in asm, tail-predicated (DLSTP/LETP: the last vector's lanes past n inactive, no
// VCTP of GCC's own, which rebuilt the predicate in 5 instructions a vector): the max 3
// instructions per 16 bytes, the lookups 8 per 4 (GCC 12: 11 and 19). VMAXV and VADDVA write
// an even core register, which the register variables name.
std::int32_t row_max(std::size_t n, const std::int8_t* x) noexcept {
  register std::int32_t max __asm__("r6") = INT8_MIN;
  __asm__ volatile(
      "dlstp.8 lr, %[n]\n"
      "1:\n"
      "vldrb.u8 q0, [%[x]], #16\n"
      "vmaxv.s8 %[max], q0\n"
      "letp lr, 1b\n"
      : [max] "+r"(max), [x] "+r"(x)
      : [n] "r"(n)
      : "lr", "q0", "memory");
  return static_cast<std::int8_t>(max);  // VMAXV.S8 sets the low byte
}

std::uint32_t lookups(std::size_t n, const std::int8_t* x, std::int32_t max, const std::int32_t* exp,
                      std::int32_t* exps) noexcept {
  register std::uint32_t sum __asm__("r6") = 0;
  __asm__ volatile(
      "vdup.32 q2, %[max]\n"
      "dlstp.32 lr, %[n]\n"
      "1:\n"
      "vldrb.s32 q0, [%[x]], #4\n"
      "vsub.i32 q0, q2, q0\n"  // max - x, in [0, 255]
      "vldrw.u32 q1, [%[exp], q0, uxtw #2]\n"
      "vstrw.32 q1, [%[exps]], #16\n"
      "vadd.i32 q1, q1, %[half]\n"
      "vshr.u32 q1, q1, #%c[bits]\n"
      "vaddva.u32 %[sum], q1\n"
      "letp lr, 1b\n"
      : [sum] "+r"(sum), [x] "+l"(x), [exps] "+r"(exps)  // VLDRB.S32 takes a low register
      : [n] "r"(n), [max] "r"(max), [exp] "r"(exp), [half] "r"(half), [bits] "n"(bits)
      : "lr", "q0", "q1", "q2", "memory");
  return sum;
}
#else
std::int32_t row_max(std::size_t n, const std::int8_t* x) noexcept {
  std::int32_t max = INT8_MIN;
  for (std::size_t j = 0; j < n; ++j) max = x[j] > max ? x[j] : max;
  return max;
}

std::uint32_t lookups(std::size_t n, const std::int8_t* x, std::int32_t max, const std::int32_t* exp,
                      std::int32_t* exps) noexcept {
  std::uint32_t sum = 0;
  for (std::size_t j = 0; j < n; ++j) {
    exps[j] = exp[max - x[j]];
    sum += (std::uint32_t(exps[j]) + half) >> bits;
  }
  return sum;
}
#endif
}  // namespace

std::int32_t softmax_s8_exps(std::size_t n, const std::int8_t* x, const std::int32_t* exp,
                             std::int32_t* exps) noexcept {
  return static_cast<std::int32_t>(lookups(n, x, row_max(n, x), exp, exps));
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

// SPDX-License-Identifier: Apache-2.0
// row_sums_s8 (emha/kernels/gemm_s8.hpp): each row's int8 summed into int32.
//   Helium               VADDVA.S8, 16 bytes an instruction, tail-predicated (DLSTP/LETP): 2
//                        instructions per 16 bytes, in asm (VADDVA writes an even core register)
//   DSP (Cortex-M4/M7,   4 bytes a USADA8: the bytes flipped to b + 128 (EOR 0x80808080), their
//   armv6)               unsigned sum against 0, 128 k taken off at the end; 3 instructions per 4
//   others               the loop, which x86 and NEON compilers vectorize
// Integer sums: the reference's values.

#include <cstring>

#include "emha/kernels/gemm_s8.hpp"
#include "isa_kernels.hpp"
#include "simd_arch.hpp"

#if EMHA_SIMD && !defined(EMHA_SIMD_MVE) && defined(__ARM_FEATURE_DSP) && !defined(__ARM_NEON) && \
    !defined(__ARM_NEON__)
#include <arm_acle.h>
#define EMHA_ROW_SUMS_DSP 1
#endif

namespace emha::detail {
inline namespace EMHA_ISA {

namespace {
#if EMHA_SIMD && defined(EMHA_SIMD_MVE)
std::int32_t row_sum(std::size_t k, const std::int8_t* a) noexcept {
  register std::int32_t sum __asm__("r6") = 0;
  if (k == 0) return 0;
  __asm__ volatile(
      "dlstp.8 lr, %[k]\n"
      "1:\n"
      "vldrb.u8 q0, [%[a]], #16\n"
      "vaddva.s8 %[sum], q0\n"
      "letp lr, 1b\n"
      : [sum] "+r"(sum), [a] "+r"(a)
      : [k] "r"(k)
      : "lr", "q0", "memory");
  return sum;
}
#elif defined(EMHA_ROW_SUMS_DSP)
std::int32_t row_sum(std::size_t k, const std::int8_t* a) noexcept {
  std::uint32_t flipped = 0;  // sum of b + 128 over whole words
  std::size_t p = 0;
  for (; p + 4 <= k; p += 4) {
    std::uint32_t w;
    std::memcpy(&w, a + p, sizeof w);
    flipped = __usada8(w ^ 0x80808080u, 0u, flipped);
  }
  std::int32_t sum = static_cast<std::int32_t>(flipped - 128u * std::uint32_t(p));
  for (; p < k; ++p) sum += a[p];
  return sum;
}
#else
std::int32_t row_sum(std::size_t k, const std::int8_t* a) noexcept {
  std::int32_t sum = 0;
  for (std::size_t p = 0; p < k; ++p) sum += a[p];
  return sum;
}
#endif
}  // namespace

void row_sums_s8(std::size_t m, std::size_t k, const std::int8_t* a, std::size_t lda, std::int32_t* sums) noexcept {
  for (std::size_t i = 0; i < m; ++i) sums[i] = row_sum(k, a + i * lda);
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

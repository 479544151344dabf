// SPDX-License-Identifier: Apache-2.0
// softmax_s8_exps (emha/kernels/softmax_s8.hpp): a row's max, its exps looked up and their sum.
// Helium: the max 16 bytes a VMAXV, the lookups 4 lanes a gather (VLDRB.S32 widening the bytes
// to offsets), the sum VADDVA, the last vector predicated; elsewhere two loops the compiler
// vectorizes where it can. Each exp's rescale to Q12.19 is (e + 2^11) >> 12 in unsigned
// arithmetic: the table's entries lie in [0, 2^31), where TFLite's rounding half away from zero
// is half up (no overflow, no sign test). Integer arithmetic: the reference's values.

#include "emha/kernels/softmax_s8.hpp"
#include "isa_kernels.hpp"
#include "simd_arch.hpp"

#if EMHA_SIMD && defined(EMHA_SIMD_MVE)
#include <arm_mve.h>
#endif

namespace emha::detail {
inline namespace EMHA_ISA {

namespace {
constexpr int bits = softmax_s8_sum_bits;
constexpr std::uint32_t half = 1u << (bits - 1);

#if EMHA_SIMD && defined(EMHA_SIMD_MVE)
std::int32_t row_max(std::size_t n, const std::int8_t* x) noexcept {
  std::int32_t max = INT8_MIN;
  for (std::size_t j = 0; j < n; j += 16) {
    const mve_pred16_t p = vctp8q(std::uint32_t(n - j));
    max = vmaxvq_p_s8(std::int8_t(max), vldrbq_z_s8(x + j, p), p);
  }
  return max;
}

std::uint32_t lookups(std::size_t n, const std::int8_t* x, std::int32_t max, const std::int32_t* exp,
                      std::int32_t* exps) noexcept {
  const int32x4_t top = vdupq_n_s32(max);
  std::uint32_t sum = 0;
  for (std::size_t j = 0; j < n; j += 4) {
    const mve_pred16_t p = vctp32q(std::uint32_t(n - j));
    const uint32x4_t k = vreinterpretq_u32_s32(vsubq_s32(top, vldrbq_z_s32(x + j, p)));  // [0, 255]
    const int32x4_t e = vldrwq_gather_shifted_offset_z_s32(exp, k, p);
    vstrwq_p_s32(exps + j, e, p);
    sum = vaddvaq_p_u32(sum, vshrq_n_u32(vaddq_n_u32(vreinterpretq_u32_s32(e), half), bits), p);
  }
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

// SPDX-License-Identifier: Apache-2.0
// requantize_s16 (emha/kernels/requantize_s16.hpp): the attention's use (no bias, one multiplier,
// whose Q15 rounding the compiler hoists out of the loop) in a loop of its own, the rest the
// reference's loop; portable C++ for each variant's compiler.

#include "emha/kernels/requantize_s16.hpp"
#include "emha/kernels/requantize_s16_ref.hpp"
#include "isa_kernels.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

void requantize_s16(std::size_t n, const std::int64_t* acc, const std::int64_t* bias, const QuantizedMultiplier* q,
                    std::size_t q_step, std::int16_t* y, std::size_t ldy) noexcept {
  if (q_step != 0 || bias || n == 0) return requantize_s16_ref(n, acc, bias, q, q_step, y, ldy);
  const QuantizedMultiplier one = *q;
  for (std::size_t j = 0; j < n; ++j) y[j * ldy] = saturate_s16(requantize_s64(acc[j], one));
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

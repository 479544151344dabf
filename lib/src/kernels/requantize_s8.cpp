// SPDX-License-Identifier: Apache-2.0
// requantize_s8 (emha/kernels/requantize_s8.hpp): double rounding a vector of lanes at a time
// where the target has RequantLanes (requant_arch.hpp), the reference's scalar loop for the rest and for single
// rounding. Integer arithmetic: the same bytes either way.

#include "emha/kernels/requantize_s8.hpp"
#include "emha/kernels/requantize_s8_ref.hpp"
#include "isa_kernels.hpp"
#include "kernels/requant_arch.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

namespace {
// The outputs the vector lanes cover (double rounding), returning how many; 0 without RequantLanes.
template <class V = RequantLanes>
std::size_t vector_part(std::size_t n, const std::int32_t* acc, const std::int32_t* bias,
                        const QuantizedMultiplier* q, std::size_t q_step, std::int32_t zero_point, std::int8_t* y,
                        std::size_t ldy) noexcept {
  std::size_t j = 0;
  if constexpr (V::lanes > 0)
    for (; j + V::lanes <= n; j += V::lanes)
      V::store(V::run(acc + j, bias ? bias + j : nullptr, q + j * q_step, q_step, zero_point), y + j * ldy, ldy);
  return j;
}
}  // namespace

void requantize_s8(std::size_t n, const std::int32_t* acc, const std::int32_t* bias, const QuantizedMultiplier* q,
                   std::size_t q_step, Rounding rounding, std::int32_t zero_point, std::int8_t* y,
                   std::size_t ldy) noexcept {
  const std::size_t j =
      rounding == Rounding::double_rounding ? vector_part(n, acc, bias, q, q_step, zero_point, y, ldy) : 0;
  requantize_s8_ref(n - j, acc + j, bias ? bias + j : nullptr, q + j * q_step, q_step, rounding, zero_point,
                    y + j * ldy, ldy);
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

// SPDX-License-Identifier: Apache-2.0
// dequantize_rows_s8 (emha/kernels/quant.hpp), vectorized: each row's int8 widened in registers
// (simd::load_s8) times its scale, the reference's one rounding per value, so the same bits.

#include "emha/kernels/quant.hpp"
#include "isa_kernels.hpp"
#include "simd_arch.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

void dequantize_rows_s8(std::size_t rows, std::size_t n, const std::int8_t* q, std::size_t ldq,
                        const float* scale, float* y, std::size_t ldy) noexcept {
  constexpr std::size_t L = simd::lanes;
  for (std::size_t r = 0; r < rows; ++r, q += ldq, y += ldy) {
    const simd::vf32 s = simd::splat(scale[r]);
    std::size_t j = 0;
    for (; j + L <= n; j += L) simd::store(y + j, simd::load_s8(q + j) * s);
    for (; j < n; ++j) y[j] = float(q[j]) * scale[r];
  }
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

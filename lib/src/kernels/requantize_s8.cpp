// SPDX-License-Identifier: Apache-2.0
// requantize_s8 (emha/kernels/requantize_s8.hpp): double rounding a vector of lanes at a time
// where the target has RequantLanes (requant_arch.hpp; on AVX-512 the last one masked; on Helium
// the layer's two uses by asm loops, requant_mve.hpp), else a
// scalar loop with 32-bit shifts (scalar_part); the reference's loop for the rest and for single
// rounding. Integer arithmetic: the same bytes either way. requantize_s8_channels: rows of it.

#include "emha/kernels/requantize_s8.hpp"
#include "emha/kernels/requantize_s8_ref.hpp"
#include "isa_kernels.hpp"
#include "kernels/requant_arch.hpp"
#include "kernels/requant_mve.hpp"

#include <type_traits>

namespace emha::detail {
inline namespace EMHA_ISA {

namespace {
template <class V, class = void>
struct HasPart : std::false_type {};
template <class V>
struct HasPart<V, decltype(void(V::load_part(nullptr, 0)))> : std::true_type {};

// The outputs the vector lanes cover (double rounding), returning how many (all n where V has
// parts: the last vector masked); 0 without RequantLanes.
// One loop per use, so that none tests bias or q_step per vector: the projections' (a bias, a
// multiplier per channel) and the attention's (no bias, one multiplier, split once).
template <bool Bias, bool PerChannel, class V>
std::size_t lanes_loop(std::size_t n, const std::int32_t* acc, const std::int32_t* bias, const QuantizedMultiplier* q,
                       std::int32_t zero_point, std::int8_t* y, std::size_t ldy) noexcept {
  const typename V::vec z = V::splat(zero_point);
  typename V::Multipliers m{};
  if constexpr (!PerChannel) m = V::broadcast(*q);
  std::size_t j = 0;
  for (; j + V::lanes <= n; j += V::lanes) {
    typename V::vec x = V::load(acc + j);
    if constexpr (Bias) x = V::add(x, V::load(bias + j));
    if constexpr (PerChannel) m = V::pairs(q + j);
    V::store(V::apply(x, m, z), y + j * ldy, ldy);
  }
  if constexpr (HasPart<V>::value)
    if (j < n) {
      const std::size_t r = n - j;
      typename V::vec x = V::load_part(acc + j, r);
      if constexpr (Bias) x = V::add(x, V::load_part(bias + j, r));
      if constexpr (PerChannel) m = V::pairs_part(q + j, r);
      V::store_part(V::apply(x, m, z), y + j * ldy, ldy, r);
      j = n;
    }
  return j;
}

// The four uses' loops chosen by name here and in scalar_part (a dispatcher through a generic
// lambda cost the M4's -Os build 10k instructions a forward: its loops were no longer inlined).
// Inlined: outlined (GCC 12 did once requantize_s8_channels called requantize_s8 too), every
// call paid for a second one.
template <class V = RequantLanes>
[[gnu::always_inline]] inline std::size_t vector_part(std::size_t n, const std::int32_t* acc,
                                                      const std::int32_t* bias, const QuantizedMultiplier* q,
                                                      std::size_t q_step, std::int32_t zero_point, std::int8_t* y,
                                                      std::size_t ldy) noexcept {
  if constexpr (V::lanes > 0) {
    if (n < V::lanes && !HasPart<V>::value) return 0;
    if constexpr (has_mve_loops) {  // requant_mve.hpp: the layer's uses in asm, the rest below
      if (q_step && bias) return channel_loop_mve(n, acc, bias, q, zero_point, y, ldy);
      if (!q_step && !bias && ldy == 1)
        if (const std::size_t done = tensor_loop(n, acc, *q, zero_point, y)) return done;
    }
    if (q_step)
      return bias ? lanes_loop<true, true, V>(n, acc, bias, q, zero_point, y, ldy)
                  : lanes_loop<false, true, V>(n, acc, bias, q, zero_point, y, ldy);
    return bias ? lanes_loop<true, false, V>(n, acc, bias, q, zero_point, y, ldy)
                : lanes_loop<false, false, V>(n, acc, bias, q, zero_point, y, ldy);
  } else {
    return 0;
  }
}

// Without RequantLanes (Cortex-M4/M7, armv6, the scalar build), double rounding one output at a
// time while the multiplier is below 1/2 (shift < 0, as every multiplier of the layer but an
// unusual scale is) and not negative. Its two roundings are one 64-bit sum and two shifts: with
// right = -shift >= 1 and high = (x m + 2^30) >> 31, the rounding divide by 2^right (half away
// from zero) is (high + 2^(right-1) - [high < 0]) >> right, which is
//   ((u >> (right - 1)) + 1) >> 1,  u = (x m + 2^30 - 2^31 [x < 0]) >> 31
// (where x < 0 but high >= 0, x m lies in [-2^30, 0) and both sides are 0). Where right >= 2,
// u >> (right - 1) is within 2^30 of 0 and the zero point joins before the last shift:
// ((u >> (right - 1)) + 1 + 2 z) >> 1 (the same integer; one saturating shift, half_to_s8). No
// saturation test: only x = m = INT32_MIN saturates. One loop per use, as lanes_loop; the
// reference's loop takes the rest (shift >= 0, a negative multiplier).
template <bool Bias, bool PerChannel>
std::size_t scalar_loop(std::size_t n, const std::int32_t* acc, const std::int32_t* bias, const QuantizedMultiplier* q,
                        std::int32_t zero_point, std::int8_t* y, std::size_t ldy) noexcept {
  const auto input = [&](std::size_t j) {
    return static_cast<std::int32_t>(std::uint32_t(acc[j]) + std::uint32_t(Bias ? bias[j] : 0));
  };
  std::size_t j = 0;
  if constexpr (PerChannel && Bias && has_channel_loop) {
    j = channel_loop(n, acc, bias, q, zero_point, y, ldy);  // requant_arch.hpp: the same, in asm
  } else if constexpr (PerChannel) {
    for (; j < n; ++j) {
      const std::int32_t m = q[j].multiplier, right1 = ~q[j].shift;  // right - 1
      if ((right1 | m) < 0) break;  // shift >= 0 or m < 0: the reference's loop
      const std::int32_t u = high_signed_nudge(input(j), m);  // requant_arch.hpp
      y[j * ldy] = clamp_s8((((u >> right1) + 1) >> 1) + zero_point);
    }
  } else {
    const QuantizedMultiplier one = q[0];  // a copy: y's stores may alias q (int8 aliases all)
    const std::int32_t right1 = ~one.shift;
    if ((right1 | one.multiplier) < 0) return 0;
    if (right1 == 0) {
      for (; j < n; ++j) y[j * ldy] = clamp_s8(((high_signed_nudge(input(j), one.multiplier) + 1) >> 1) + zero_point);
    } else {
      const std::int32_t round_zero = 1 + 2 * zero_point;
      for (; j < n; ++j)
        y[j * ldy] = half_to_s8((high_signed_nudge(input(j), one.multiplier) >> right1) + round_zero);
    }
  }
  return j;
}

template <class V = RequantLanes>
std::size_t scalar_part(std::size_t n, const std::int32_t* acc, const std::int32_t* bias, const QuantizedMultiplier* q,
                        std::size_t q_step, std::int32_t zero_point, std::int8_t* y, std::size_t ldy) noexcept {
  if constexpr (V::lanes == 0) {
    if (n == 0) return 0;
    if (q_step)
      return bias ? scalar_loop<true, true>(n, acc, bias, q, zero_point, y, ldy)
                  : scalar_loop<false, true>(n, acc, bias, q, zero_point, y, ldy);
    return bias ? scalar_loop<true, false>(n, acc, bias, q, zero_point, y, ldy)
                : scalar_loop<false, false>(n, acc, bias, q, zero_point, y, ldy);
  } else {
    return 0;
  }
}
}  // namespace

// One copy: neither inlined into requantize_s8_channels nor cloned for its q_step of 1 (GCC 12
// did, 1.8 KiB more flash on Helium for no fewer instructions; clang has no noclone).
#if defined(__clang__)
#define EMHA_NOCLONE
#else
#define EMHA_NOCLONE [[gnu::noclone]]
#endif
[[gnu::noinline]] EMHA_NOCLONE void requantize_s8(std::size_t n, const std::int32_t* acc, const std::int32_t* bias,
                                                   const QuantizedMultiplier* q, std::size_t q_step,
                                                   Rounding rounding, std::int32_t zero_point, std::int8_t* y,
                                                   std::size_t ldy) noexcept {
  std::size_t j = 0;
  if (rounding == Rounding::double_rounding) {
    j = vector_part(n, acc, bias, q, q_step, zero_point, y, ldy);
    j += scalar_part(n - j, acc + j, bias ? bias + j : nullptr, q + j * q_step, q_step, zero_point, y + j * ldy, ldy);
  }
  requantize_s8_ref(n - j, acc + j, bias ? bias + j : nullptr, q + j * q_step, q_step, rounding, zero_point,
                    y + j * ldy, ldy);
}

// Helium: three rows at a time by channel_rows_mve (double rounding with a bias), its whole
// vectors of channels; the rest, and every row elsewhere, by requantize_s8 row by row (this
// variant's: qualified, as ADL also finds emha::requantize_s8).
void requantize_s8_channels(std::size_t m, std::size_t n, const std::int32_t* acc, std::size_t lda,
                            const std::int32_t* bias, const QuantizedMultiplier* q, Rounding rounding,
                            std::int32_t zero_point, std::int8_t* y, std::size_t y_row, std::size_t y_col) noexcept {
  std::size_t i = 0;
  if constexpr (has_mve_loops)
    if (rounding == Rounding::double_rounding && bias)
      for (; i + 3 <= m; i += 3) {
        const std::int32_t* a = acc + i * lda;
        std::int8_t* yi = y + i * y_row;
        const std::size_t j = channel_rows_mve(n, a, lda, bias, q, zero_point, yi, y_row, y_col);
        for (std::size_t r = 0; r < 3 && j < n; ++r)
          detail::requantize_s8(n - j, a + r * lda + j, bias + j, q + j, 1, rounding, zero_point,
                                yi + r * y_row + j * y_col, y_col);
      }
  for (; i < m; ++i)
    detail::requantize_s8(n, acc + i * lda, bias, q, 1, rounding, zero_point, y + i * y_row, y_col);
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

// SPDX-License-Identifier: Apache-2.0
// Vectorized row softmax and the online softmax of fused attention.
// Row softmax: pass 1 forms z = scale*x (+ mask) into y, pass 2 finds the row max, pass 3
// writes exp(z - max), pass 4 sums those, pass 5 scales by 1/sum; the row stays in L1 for the
// sequence lengths emha targets. Rows go in interleaved groups (see rows_per_group).

#include <cmath>
#include <limits>

#include "emha/config.hpp"
#include "emha/kernels/softmax.hpp"
#include "isa_kernels.hpp"
#include "kernels/lane_reduce.hpp"
#include "simd_arch.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {
namespace {

using simd::lanes;
using simd::vf32;

constexpr float neg_inf = -std::numeric_limits<float>::infinity();

bool has_nan(std::size_t n, const float* y) noexcept {
  bool nan = false;
  for (std::size_t j = 0; j < n; ++j) nan = nan || std::isnan(y[j]);
  return nan;
}

void scale_row(std::size_t n, float* y, float f) noexcept {
  const vf32 vf = simd::splat(f);
  std::size_t j = 0;
  for (; j + lanes <= n; j += lanes) simd::store(y + j, simd::load(y + j) * vf);
  for (; j < n; ++j) y[j] *= f;
}

// y /= d, correctly rounded per element (one rounding, not the two of y * (1 / d)).
void divide_row(std::size_t n, float* y, float d) noexcept {
  const vf32 vd = simd::splat(d);
  std::size_t j = 0;
  for (; j + lanes <= n; j += lanes) simd::store(y + j, simd::vdiv(simd::load(y + j), vd));
  for (; j < n; ++j) y[j] /= d;
}

void fill_row(std::size_t n, float* y, float v) noexcept {
  for (std::size_t j = 0; j < n; ++j) y[j] = v;
}

// Rows per group: the max and exp passes of a group's rows run interleaved. One row of 32
// scores is a chain of dependent steps (max, reduction, exp, sum, reduction) that leaves an
// out-of-order core mostly idle; four chains side by side take ~20% less time per row at S = 32
// on AVX2 (four, not more: the exp's constants and the chains' registers fill its 16). The
// Cortex-M (simd::lean_stack, scalar or MVE: in order, stack and flash count) keeps one row at a time.
constexpr std::size_t rows_per_group = simd::lean_stack ? 1 : 4;

// max[r] = max_j y[r][j] for R rows ldy apart, and then of floor[r] if given (the running max
// of the online softmax). Each row's operations and their order are those of R = 1, so a result
// does not depend on which group its row fell in. floor is folded in per row, right after the
// row's own max: as a separate loop over r, GCC turns the R compares into one vector op whose
// load of the R just-stored floats misses store forwarding (~10% of the online update at S = 32).
template <std::size_t R>
[[gnu::always_inline]] inline void rows_max(std::size_t n, const float* y, std::size_t ldy,
                                            float (&max)[R], const float* floor = nullptr) noexcept {
  vf32 vmax[R];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < R; ++r) vmax[r] = simd::splat(neg_inf);
  std::size_t j = 0;
  for (; j + lanes <= n; j += lanes) {
#pragma GCC unroll 8
    for (std::size_t r = 0; r < R; ++r) vmax[r] = simd::vmax(vmax[r], simd::load(y + r * ldy + j));
  }
#pragma GCC unroll 8
  for (std::size_t r = 0; r < R; ++r) {
    max[r] = reduce_max(vmax[r]);
    for (std::size_t t = j; t < n; ++t) max[r] = y[r * ldy + t] > max[r] ? y[r * ldy + t] : max[r];
    if (floor) max[r] = max[r] > floor[r] ? max[r] : floor[r];
  }
}

// y[r][j] <- exp(y[r][j] - max[r]) and sum[r] = their sum, for R rows ldy apart (as rows_max).
// A NaN y (or max = +inf) makes the sum NaN. Inlined, so that the exp's constants are set up
// once per group of rows, not once per vector. The sums are a second pass over the stored
// exps (same order, same bits): in the exp loop R running sums next to R maxima and the exp's
// constants overflow AVX2's 16 registers, and GCC spilled the sums, chaining every add through
// a store and a reload (online update 32x32 -7%, 64x64 -5% with the second pass).
template <std::size_t R>
[[gnu::always_inline]] inline void rows_exp_sum(std::size_t n, float* y, std::size_t ldy,
                                                const float (&max)[R], float (&sum)[R]) noexcept {
  vf32 vm[R], vsum[R];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < R; ++r) {
    vm[r] = simd::splat(max[r]);
    vsum[r] = simd::splat(0.0f);
  }
  std::size_t j = 0;
  for (; j + lanes <= n; j += lanes) {
#pragma GCC unroll 8
    for (std::size_t r = 0; r < R; ++r) {
      float* yr = y + r * ldy + j;
      simd::store(yr, simd::vexp(simd::load(yr) - vm[r]));
    }
  }
  for (std::size_t i = 0; i < j; i += lanes) {
#pragma GCC unroll 8
    for (std::size_t r = 0; r < R; ++r) vsum[r] = vsum[r] + simd::load(y + r * ldy + i);
  }
#pragma GCC unroll 8
  for (std::size_t r = 0; r < R; ++r) {
    sum[r] = reduce_sum(vsum[r]);
    for (std::size_t t = j; t < n; ++t) {
      float* yt = y + r * ldy + t;
      *yt = std::exp(*yt - max[r]);
      sum[r] += *yt;
    }
  }
}

template <std::size_t R>
bool any_neg_inf(const float (&v)[R]) noexcept {
  bool any = false;
  for (std::size_t r = 0; r < R; ++r) any = any || v[r] == neg_inf;
  return any;
}

// y = scale * x (+ mask) for one row.
void scaled_row(std::size_t n, const float* x, const float* mask, float* y, float scale) noexcept {
  const vf32 vscale = simd::splat(scale);
  std::size_t j = 0;
  for (; j + lanes <= n; j += lanes) {
    vf32 z = simd::load(x + j) * vscale;
    if (mask) z = z + simd::load(mask + j);
    simd::store(y + j, z);
  }
  for (; j < n; ++j) y[j] = scale * x[j] + (mask ? mask[j] : 0.0f);
}

// Softmax in place of R rows of z, ldy apart. A group with a row whose every z is -inf (fully
// masked: rare) goes row by row.
template <std::size_t R>
void softmax_rows(std::size_t n, float* y, std::size_t ldy) noexcept {
  float max[R];
  rows_max<R>(n, y, ldy, max);
  if (any_neg_inf(max)) {
    if constexpr (R > 1) {
      for (std::size_t r = 0; r < R; ++r) softmax_rows<1>(n, y + r * ldy, ldy);
    } else {  // every key masked, unless a NaN hid from the max: keep it visible
      fill_row(n, y, has_nan(n, y) ? std::numeric_limits<float>::quiet_NaN() : 0.0f);
    }
    return;
  }
  float sum[R];
  rows_exp_sum<R>(n, y, ldy, max, sum);
  for (std::size_t r = 0; r < R; ++r) scale_row(n, y + r * ldy, 1.0f / sum[r]);
}

// The online update (softmax.hpp) of R rows: scores s (lds apart), running max and sum, and
// accumulator rows o (ldo apart; null when o_cols == 0). A group with a row that has seen no
// unmasked key yet goes row by row.
template <std::size_t R>
void online_update_rows(std::size_t n, float* s, std::size_t lds, float* row_max_io,
                        float* row_sum_io, float* o, std::size_t ldo, std::size_t o_cols) noexcept {
  float m_new[R];
  rows_max<R>(n, s, lds, m_new, row_max_io);
  if (any_neg_inf(m_new)) {
    if constexpr (R > 1) {
      for (std::size_t r = 0; r < R; ++r)
        online_update_rows<1>(n, s + r * lds, lds, row_max_io + r, row_sum_io + r,
                              o_cols ? o + r * ldo : nullptr, ldo, o_cols);
    } else {  // every key so far masked: this block adds nothing (but a NaN)
      if (has_nan(n, s)) row_sum_io[0] = std::numeric_limits<float>::quiet_NaN();
      fill_row(n, s, 0.0f);
    }
    return;
  }
  float block_sum[R];
  rows_exp_sum<R>(n, s, lds, m_new, block_sum);
  for (std::size_t r = 0; r < R; ++r) {
    const float m_old = row_max_io[r];
    if (m_new[r] != m_old) {
      if (m_old != neg_inf) {  // rescale what was summed against the old max
        const float c = std::exp(m_old - m_new[r]);
        row_sum_io[r] *= c;
        if (o_cols) scale_row(o_cols, o + r * ldo, c);
      }
      row_max_io[r] = m_new[r];
    }
    row_sum_io[r] += block_sum[r];
  }
}

}  // namespace

void softmax_f32(std::size_t rows, std::size_t n, const float* x, std::size_t ldx, float* y,
                 std::size_t ldy, const SoftmaxOptions& o) noexcept {
  if (rows == 0 || n == 0) return;
  EMHA_ASSERT(x && y && ldx >= n && ldy >= n);
  const auto scaled = [&](std::size_t i) {
    scaled_row(n, x + i * ldx, o.mask ? o.mask + i * o.ldmask : nullptr, y + i * ldy, o.scale);
  };
  std::size_t i = 0;
  for (; i + rows_per_group <= rows; i += rows_per_group) {
    for (std::size_t r = 0; r < rows_per_group; ++r) scaled(i + r);
    softmax_rows<rows_per_group>(n, y + i * ldy, ldy);
  }
  for (; i < rows; ++i) {
    scaled(i);
    softmax_rows<1>(n, y + i * ldy, ldy);
  }
}

void softmax_online_update_f32(std::size_t rows, std::size_t n, float* s, std::size_t lds,
                               float* row_max_io, float* row_sum_io, float* o, std::size_t ldo,
                               std::size_t o_cols) noexcept {
  if (rows == 0 || n == 0) return;
  EMHA_ASSERT(s && row_max_io && row_sum_io && lds >= n && (o_cols == 0 || (o && ldo >= o_cols)));
  const auto o_row = [&](std::size_t i) { return o_cols ? o + i * ldo : nullptr; };
  std::size_t i = 0;
  for (; i + rows_per_group <= rows; i += rows_per_group)
    online_update_rows<rows_per_group>(n, s + i * lds, lds, row_max_io + i, row_sum_io + i,
                                       o_row(i), ldo, o_cols);
  for (; i < rows; ++i)
    online_update_rows<1>(n, s + i * lds, lds, row_max_io + i, row_sum_io + i, o_row(i), ldo, o_cols);
}

void softmax_online_finish_f32(std::size_t rows, std::size_t o_cols, const float* row_sum,
                               float* o, std::size_t ldo) noexcept {
  if (rows == 0 || o_cols == 0) return;
  EMHA_ASSERT(row_sum && o && ldo >= o_cols);
  for (std::size_t i = 0; i < rows; ++i) {
    float* oi = o + i * ldo;
    if (row_sum[i] == 0.0f)
      fill_row(o_cols, oi, 0.0f);  // every key masked: zero attention
    else
      divide_row(o_cols, oi, row_sum[i]);
  }
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

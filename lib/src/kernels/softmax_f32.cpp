// Vectorized row softmax: pass 1 forms z = scale*x (+ mask) into y and finds the row max,
// pass 2 writes exp(z - max) and sums it, pass 3 scales by 1/sum. Three passes over one row
// that stays in L1 for the sequence lengths emha targets.

#include <cmath>
#include <limits>

#include "emha/config.hpp"
#include "emha/kernels/softmax.hpp"
#include "simd_arch.hpp"

namespace emha {
namespace {

using simd::lanes;
using simd::vf32;

// Horizontal max and sum as a pairwise tree over the lanes (depth log2(lanes), not a chain of
// lanes - 1 dependent operations: on short rows the reduction is most of the row's latency).
// The order is fixed per build, so results stay deterministic.
float reduce_max(vf32 v) noexcept {
  float t[lanes];
  simd::store(t, v);
  for (std::size_t w = lanes / 2; w > 0; w /= 2)
    for (std::size_t i = 0; i < w; ++i) t[i] = t[i + w] > t[i] ? t[i + w] : t[i];
  return t[0];
}

float reduce_sum(vf32 v) noexcept {
  float t[lanes];
  simd::store(t, v);
  for (std::size_t w = lanes / 2; w > 0; w /= 2)
    for (std::size_t i = 0; i < w; ++i) t[i] += t[i + w];
  return t[0];
}

constexpr float neg_inf = -std::numeric_limits<float>::infinity();

bool has_nan(std::size_t n, const float* y) noexcept {
  bool nan = false;
  for (std::size_t j = 0; j < n; ++j) nan = nan || std::isnan(y[j]);
  return nan;
}

// row_max and exp_sum are inlined into the row loops, so that the exp's constants are set up
// once per call rather than once per row.
[[gnu::always_inline]] inline float row_max(std::size_t n, const float* y) noexcept {
  vf32 vmax = simd::splat(neg_inf);
  std::size_t j = 0;
  for (; j + lanes <= n; j += lanes) vmax = simd::vmax(vmax, simd::load(y + j));
  float max = reduce_max(vmax);
  for (; j < n; ++j) max = y[j] > max ? y[j] : max;
  return max;
}

// y[j] <- exp(y[j] - max); returns the sum. A NaN y (or max = +inf) makes the sum NaN.
[[gnu::always_inline]] inline float exp_sum(std::size_t n, float* y, float max) noexcept {
  const vf32 vm = simd::splat(max);
  vf32 vsum = simd::splat(0.0f);
  std::size_t j = 0;
  for (; j + lanes <= n; j += lanes) {
    const vf32 e = simd::vexp(simd::load(y + j) - vm);
    simd::store(y + j, e);
    vsum = vsum + e;
  }
  float sum = reduce_sum(vsum);
  for (; j < n; ++j) {
    y[j] = std::exp(y[j] - max);
    sum += y[j];
  }
  return sum;
}

void scale_row(std::size_t n, float* y, float f) noexcept {
  const vf32 vf = simd::splat(f);
  std::size_t j = 0;
  for (; j + lanes <= n; j += lanes) simd::store(y + j, simd::load(y + j) * vf);
  for (; j < n; ++j) y[j] *= f;
}

void fill_row(std::size_t n, float* y, float v) noexcept {
  for (std::size_t j = 0; j < n; ++j) y[j] = v;
}

void softmax_row(std::size_t n, const float* x, const float* mask, float* y,
                 float scale) noexcept {
  const vf32 vscale = simd::splat(scale);
  std::size_t j = 0;
  for (; j + lanes <= n; j += lanes) {
    vf32 z = simd::load(x + j) * vscale;
    if (mask) z = z + simd::load(mask + j);
    simd::store(y + j, z);
  }
  for (; j < n; ++j) y[j] = scale * x[j] + (mask ? mask[j] : 0.0f);

  const float max = row_max(n, y);
  if (max == neg_inf) {  // every key masked, unless a NaN hid from the max: keep it visible
    fill_row(n, y, has_nan(n, y) ? std::numeric_limits<float>::quiet_NaN() : 0.0f);
    return;
  }
  scale_row(n, y, 1.0f / exp_sum(n, y, max));
}

}  // namespace

void softmax_f32(std::size_t rows, std::size_t n, const float* x, std::size_t ldx, float* y,
                 std::size_t ldy, const SoftmaxOptions& o) noexcept {
  if (rows == 0 || n == 0) return;
  EMHA_ASSERT(x && y && ldx >= n && ldy >= n);
  for (std::size_t i = 0; i < rows; ++i) {
    const float* mask = o.mask ? o.mask + i * o.ldmask : nullptr;
    softmax_row(n, x + i * ldx, mask, y + i * ldy, o.scale);
  }
}

}  // namespace emha

namespace emha {

void softmax_online_update_f32(std::size_t rows, std::size_t n, float* s, std::size_t lds,
                               float* row_max_io, float* row_sum_io, float* o, std::size_t ldo,
                               std::size_t o_cols) noexcept {
  if (rows == 0 || n == 0) return;
  EMHA_ASSERT(s && row_max_io && row_sum_io && lds >= n && (o_cols == 0 || (o && ldo >= o_cols)));
  for (std::size_t i = 0; i < rows; ++i) {
    float* si = s + i * lds;
    const float block_max = row_max(n, si);
    const float m_old = row_max_io[i];
    const float m_new = block_max > m_old ? block_max : m_old;
    if (m_new == neg_inf) {  // every key so far masked: this block adds nothing (but a NaN)
      if (has_nan(n, si)) row_sum_io[i] = std::numeric_limits<float>::quiet_NaN();
      fill_row(n, si, 0.0f);
      continue;
    }
    const float block_sum = exp_sum(n, si, m_new);
    if (m_new != m_old) {
      if (m_old != neg_inf) {  // rescale what was summed against the old max
        const float c = std::exp(m_old - m_new);
        row_sum_io[i] *= c;
        scale_row(o_cols, o + i * ldo, c);
      }
      row_max_io[i] = m_new;
    }
    row_sum_io[i] += block_sum;
  }
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
      scale_row(o_cols, oi, 1.0f / row_sum[i]);
  }
}

}  // namespace emha

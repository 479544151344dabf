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

float reduce_max(vf32 v) noexcept {
  float t[lanes];
  simd::store(t, v);
  float m = t[0];
  for (std::size_t i = 1; i < lanes; ++i) m = t[i] > m ? t[i] : m;
  return m;
}

float reduce_sum(vf32 v) noexcept {
  float t[lanes];
  simd::store(t, v);
  float s = 0.0f;
  for (std::size_t i = 0; i < lanes; ++i) s += t[i];
  return s;
}

void softmax_row(std::size_t n, const float* x, const float* mask, float* y,
                 float scale) noexcept {
  constexpr float neg_inf = -std::numeric_limits<float>::infinity();
  const vf32 vscale = simd::splat(scale);
  vf32 vmax = simd::splat(neg_inf);
  std::size_t j = 0;
  for (; j + lanes <= n; j += lanes) {
    vf32 z = simd::load(x + j) * vscale;
    if (mask) z = z + simd::load(mask + j);
    simd::store(y + j, z);
    vmax = simd::vmax(vmax, z);
  }
  float max = reduce_max(vmax);
  for (; j < n; ++j) {
    const float z = scale * x[j] + (mask ? mask[j] : 0.0f);
    y[j] = z;
    max = z > max ? z : max;
  }

  if (max == neg_inf) {  // every key masked, unless a NaN hid from the max: keep it visible
    bool nan = false;
    for (j = 0; j < n; ++j) nan = nan || std::isnan(y[j]);
    const float fill = nan ? std::numeric_limits<float>::quiet_NaN() : 0.0f;
    for (j = 0; j < n; ++j) y[j] = fill;
    return;
  }

  // A NaN z (or max = +inf) turns the sum into NaN, and with it the whole row.
  const vf32 vm = simd::splat(max);
  vf32 vsum = simd::splat(0.0f);
  for (j = 0; j + lanes <= n; j += lanes) {
    const vf32 e = simd::vexp(simd::load(y + j) - vm);
    simd::store(y + j, e);
    vsum = vsum + e;
  }
  float sum = reduce_sum(vsum);
  for (; j < n; ++j) {
    y[j] = std::exp(y[j] - max);
    sum += y[j];
  }

  const float inv = 1.0f / sum;
  const vf32 vinv = simd::splat(inv);
  for (j = 0; j + lanes <= n; j += lanes) simd::store(y + j, simd::load(y + j) * vinv);
  for (; j < n; ++j) y[j] *= inv;
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

// SPDX-License-Identifier: Apache-2.0
// xpos_f32 (emha/kernels/rope.hpp). One scalar implementation for every build: the pairs are
// interleaved (no lane swizzle in xsimd 8.1) and each (row, pair) needs its own powf, computed once
// and applied to every head. torchscale's float32 steps: zeta = (2i + f(0.4 hd)) / f(1.4 hd),
// factor = zeta ** (c / scale_base), [1 / factor,] cos * factor and sin * factor, then
// x * cos' + rotate_every_two(x) * sin'.

#include <cmath>

#include "emha/kernels/rope.hpp"
#include "emha/kernels/rope_ref.hpp"

namespace emha {

Status xpos_f32(std::size_t rows, std::size_t heads, std::size_t head_dim, std::size_t n_total,
                bool downscale, float scale_base, const RopeTable& t, float* x,
                std::size_t ldx) noexcept {
  if (rows > n_total) return Status::too_long;
  return xpos_centred_f32(rows, heads, head_dim, n_total - rows, n_total, downscale, scale_base, t, x, ldx);
}

Status xpos_centred_f32(std::size_t rows, std::size_t heads, std::size_t head_dim, std::size_t first,
                        std::size_t n_centre, bool downscale, float scale_base, const RopeTable& t,
                        float* x, std::size_t ldx) noexcept {
  if (head_dim == 0 || head_dim % 2 != 0 || t.d_rot != head_dim || !(scale_base > 0.0f))
    return Status::invalid_argument;
  if (first > t.positions || rows > t.positions - first) return Status::too_long;
  if (rows == 0 || heads == 0) return Status::ok;
  if (!x || !t.cos || !t.sin) return Status::null_pointer;
  if (ldx < heads * head_dim) return Status::invalid_argument;
  const std::size_t half = head_dim / 2;
  // Python's 0.4 * head_dim and 1.4 * head_dim are doubles, rounded to float32 by torch.
  const float lo = float(0.4 * double(head_dim)), span = float(1.4 * double(head_dim));
  // min_pos = -(n_centre) // 2 in Python: -ceil(n_centre / 2).
  const long long min_pos = -static_cast<long long>((n_centre + 1) / 2);
  for (std::size_t r = 0; r < rows; ++r, x += ldx) {
    const std::size_t p = first + r;
    const float exponent = float(static_cast<long long>(p) + min_pos) / scale_base;
    for (std::size_t i = 0; i < half; ++i) {
      const float zeta = (float(2 * i) + lo) / span;
      float factor = std::pow(zeta, exponent);
      if (downscale) factor = 1.0f / factor;
      const float c = t.cos[p * half + i] * factor, s = t.sin[p * half + i] * factor;
      for (std::size_t h = 0; h < heads; ++h) {
        float* pair = x + h * head_dim + 2 * i;
        rope_rotate_pair(pair[0], pair[1], c, s);
      }
    }
  }
  return Status::ok;
}

}  // namespace emha

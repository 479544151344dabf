// SPDX-License-Identifier: Apache-2.0
#pragma once
// Scalar reference of rope_f32 (same contract and arithmetic, emha/kernels/rope.hpp), the oracle
// of its tests, and the float64 rotation its accuracy is measured against. Bit for bit equal to
// rope_f32 only where the caller's build does not contract a*c - b*s into a fused multiply-add
// (-ffp-contract=off, as the library and its tests are built; GCC contracts by default where the
// target has FMA).

#include <cmath>
#include <cstddef>

#include "emha/kernels/rope.hpp"

namespace emha {

// The index of pair i's two elements within a head.
inline void rope_pair(RopePairing pairing, std::size_t d_rot, std::size_t i, std::size_t& a,
                      std::size_t& b) noexcept {
  a = pairing == RopePairing::half ? i : 2 * i;
  b = pairing == RopePairing::half ? i + d_rot / 2 : 2 * i + 1;
}

// One pair (a, b) rotated by (c, s): a' = a c - b s, b' = b c + a s, each product rounded, then
// the difference and the sum (HF's x * cos + rotate_half(x) * sin). The scalar step of rope_f32,
// its reference and xpos_f32.
inline void rope_rotate_pair(float& a, float& b, float c, float s) noexcept {
  const float ac = a * c, bs = b * s, bc = b * c, as = a * s;
  a = ac - bs;
  b = bc + as;
}

inline Status rope_f32_ref(std::size_t rows, std::size_t heads, std::size_t head_dim,
                           RopePairing pairing, std::size_t pos0, const RopeTable& t, float* x,
                           std::size_t ldx) noexcept {
  const std::size_t half = t.d_rot / 2;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* c = t.cos + (pos0 + r) * half;
    const float* s = t.sin + (pos0 + r) * half;
    for (std::size_t h = 0; h < heads; ++h) {
      float* xh = x + r * ldx + h * head_dim;
      for (std::size_t i = 0; i < half; ++i) {
        std::size_t ia, ib;
        rope_pair(pairing, t.d_rot, i, ia, ib);
        rope_rotate_pair(xh[ia], xh[ib], c[i], s[i]);
      }
    }
  }
  return Status::ok;
}

// The exact rotation of float64 math: angle (p + pos0) * base^(-2i/d_rot) in double.
inline void rope_f64(std::size_t rows, std::size_t heads, std::size_t head_dim, std::size_t d_rot,
                     RopePairing pairing, std::size_t pos0, double base, const float* x,
                     std::size_t ldx, double* y) noexcept {
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t h = 0; h < heads; ++h) {
      const float* xh = x + r * ldx + h * head_dim;
      double* yh = y + (r * heads + h) * head_dim;
      for (std::size_t j = 0; j < head_dim; ++j) yh[j] = xh[j];
      for (std::size_t i = 0; i < d_rot / 2; ++i) {
        std::size_t ia, ib;
        rope_pair(pairing, d_rot, i, ia, ib);
        const double angle = double(pos0 + r) * std::pow(base, -double(2 * i) / double(d_rot));
        const double a = xh[ia], b = xh[ib];
        yh[ia] = a * std::cos(angle) - b * std::sin(angle);
        yh[ib] = b * std::cos(angle) + a * std::sin(angle);
      }
    }
}

}  // namespace emha

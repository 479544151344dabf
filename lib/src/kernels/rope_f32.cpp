// SPDX-License-Identifier: Apache-2.0
// rope_f32 (emha/kernels/rope.hpp), vectorized for the half pairing: pair i's two elements are
// d_rot/2 apart, so a vector of consecutive i loads both halves and the table rows directly. The
// interleaved pairing runs the reference's scalar loop (xsimd 8.1 has no lane swizzle to split
// pairs). Same arithmetic as the reference either way: products rounded, then one add.

#include "emha/kernels/rope.hpp"
#include "emha/kernels/rope_ref.hpp"
#include "isa_kernels.hpp"
#include "simd_arch.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {
namespace {

using simd::lanes;
using simd::vf32;

// One head's half-paired dims [0, 2 * half): a = x[i], b = x[i + half].
void rotate_half_pairs(std::size_t half, const float* c, const float* s, float* x) noexcept {
  float* xb = x + half;
  std::size_t i = 0;
  for (; i + lanes <= half; i += lanes) {
    const vf32 a = simd::load(x + i), b = simd::load(xb + i);
    const vf32 vc = simd::load(c + i), vs = simd::load(s + i);
    simd::store(x + i, a * vc - b * vs);
    simd::store(xb + i, b * vc + a * vs);
  }
  for (; i < half; ++i) rope_rotate_pair(x[i], xb[i], c[i], s[i]);
}

}  // namespace

Status rope_f32(std::size_t rows, std::size_t heads, std::size_t head_dim, RopePairing pairing,
                std::size_t pos0, const RopeTable& t, float* x, std::size_t ldx) noexcept {
  if (t.d_rot == 0 || t.d_rot % 2 != 0 || t.d_rot > head_dim) return Status::invalid_argument;
  if (pos0 > t.positions || rows > t.positions - pos0) return Status::too_long;
  if (rows == 0 || heads == 0) return Status::ok;
  if (!x || !t.cos || !t.sin) return Status::null_pointer;
  if (ldx < heads * head_dim) return Status::invalid_argument;
  if (pairing == RopePairing::interleaved)
    return rope_f32_ref(rows, heads, head_dim, pairing, pos0, t, x, ldx);
  const std::size_t half = t.d_rot / 2;
  for (std::size_t r = 0; r < rows; ++r, x += ldx) {
    const float* c = t.cos + (pos0 + r) * half;
    const float* s = t.sin + (pos0 + r) * half;
    for (std::size_t h = 0; h < heads; ++h) rotate_half_pairs(half, c, s, x + h * head_dim);
  }
  return Status::ok;
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

// SPDX-License-Identifier: Apache-2.0
// rope_table_f32 (emha/kernels/rope.hpp): Hugging Face's float32 angle arithmetic, once per table,
// compiled once (no instruction-set variants: it runs once at start-up).

#include <cmath>

#include "emha/kernels/rope.hpp"

namespace emha {

Status rope_table_f32(std::size_t positions, std::size_t d_rot, float base, float* cos,
                      float* sin) noexcept {
  if (d_rot == 0 || d_rot % 2 != 0 || !(base > 0.0f)) return Status::invalid_argument;
  if (positions != 0 && (!cos || !sin)) return Status::null_pointer;
  const std::size_t half = d_rot / 2;
  for (std::size_t i = 0; i < half; ++i) {
    // HF: inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim)), all float32.
    const float exponent = float(2 * i) / float(d_rot);
    const float inv_freq = 1.0f / std::pow(base, exponent);
    for (std::size_t p = 0; p < positions; ++p) {
      const float angle = float(p) * inv_freq;  // one float32 product, as HF's freqs
      cos[p * half + i] = std::cos(angle);
      sin[p * half + i] = std::sin(angle);
    }
  }
  return Status::ok;
}

}  // namespace emha

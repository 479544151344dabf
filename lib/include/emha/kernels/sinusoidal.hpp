// SPDX-License-Identifier: Apache-2.0
#pragma once
// The sinusoidal positional encoding of "Attention Is All You Need", added to the input before
// the first layer: pe[p][2i] = sin(p / 10000^(2i/d)), pe[p][2i+1] = cos(p / 10000^(2i/d)).
// Interleaved (sin, cos, sin, cos, ...), as the paper, the PyTorch tutorial and the blog encoder
// block this product reproduces; not fairseq's / tensor2tensor's concatenated [sin | cos] with a
// frequency step of ln(10000) / (d/2 - 1).
// Each value is computed in double and rounded to float once: what a Python loop over math.sin
// stores into a float tensor. The PyTorch tutorial's float32 exp(2i * -ln(10000)/d) * p differs
// from it by float32 rounding of the angle (~p * 2^-24 rad).

#include <cstddef>

#include "emha/status.hpp"

namespace emha {

// pe [positions x d_model], filled once into storage the caller owns (a table in flash for a
// fixed maximum length). d_model even and > 0, else invalid_argument; pe null: null_pointer.
// A table filled once, in double: no variants, not in the kernel list (lib/src/kernel_list.def).
Status sinusoidal_table_f32(std::size_t positions, std::size_t d_model, float* pe) noexcept;

}  // namespace emha

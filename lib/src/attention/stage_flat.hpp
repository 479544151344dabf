// SPDX-License-Identifier: Apache-2.0
#pragma once
// Stages of the flat head split (HeadSplit::flat_view, config.hpp): the blog block's
// `x.view(batch * heads, -1, d_k)` with no transpose, as copies that turn it into the column
// split the heads read, and back:
//   split_flat  each of one sequence's projected Q, K, V blocks [rows x W] (W = n * d_k, n heads):
//               head h is floats [h * rows * d_k, (h + 1) * rows * d_k) of the block read as one
//               flat array, i.e. rows of d_k: it moves to columns h * d_k .. of its rows
//   merge_flat  the context [S_q x q_dim] the other way: `ctx.view(batch, -1, d_k * heads)` of
//               the heads' [heads, S_q, d_k]
// Each copies its block into the first task slot (mha_slot_bytes holds the largest) and writes
// it back permuted, so the rest of the pass is the column split's.

#include <cstddef>

#include "attention/pass.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

// Block x [rows x width] (row stride ld) of n = width / dk heads, permuted through tmp: with F the
// block's floats in row order, flat_to_columns moves F[(h * rows + i) * dk ..] (the flat view's
// row i of head h) to x[i][h * dk ..]; otherwise x[i][h * dk ..] goes to F[(h * rows + i) * dk ..],
// which is row (h * rows + i) / n, column ((h * rows + i) % n) * dk of x.
inline void permute_heads(float* x, std::size_t rows, std::size_t width, std::size_t ld, std::size_t dk,
                          bool flat_to_columns, float* tmp) noexcept {
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t c = 0; c < width; ++c) tmp[i * width + c] = x[i * ld + c];
  const std::size_t n = width / dk;
  for (std::size_t h = 0; h < n; ++h)
    for (std::size_t i = 0; i < rows; ++i) {
      const std::size_t t = h * rows + i;  // row of the flat view, counted over all heads
      const float* from = flat_to_columns ? tmp + t * dk : tmp + i * width + h * dk;
      float* to = flat_to_columns ? x + i * ld + h * dk : x + t / n * ld + t % n * dk;
      for (std::size_t c = 0; c < dk; ++c) to[c] = from[c];
    }
}

template <class K>
[[gnu::noinline]] Status split_flat_stage(const Pass& s, std::size_t) noexcept {
  const MhaDims& d = s.d;
  const std::size_t ld = d.qkv_dim(), dk = d.d_k();
  float* tmp = reinterpret_cast<float*>(s.slots.base);
  permute_heads(s.qkv, s.sh.seq_q, d.q_dim(), ld, dk, true, tmp);
  for (int i = 1; i < 3 && s.new_kv; ++i) permute_heads(s.qkv + d.proj_col(i), s.new_kv, d.kv_dim(), ld, dk, true, tmp);
  return Status::ok;
}

template <class K>
[[gnu::noinline]] Status merge_flat_stage(const Pass& s, std::size_t) noexcept {
  const MhaDims& d = s.d;
  permute_heads(s.ctx, s.sh.seq_q, d.q_dim(), d.q_dim(), d.d_k(), false, reinterpret_cast<float*>(s.slots.base));
  return Status::ok;
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

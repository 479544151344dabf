// SPDX-License-Identifier: Apache-2.0
#pragma once
// T5's relative position bias (Hugging Face transformers' T5Attention, its
// _relative_position_bucket and compute_bias): the score of query position i and key position j
// gets table[bucket(j - i)][h], a learned scalar per bucket and head. Buckets: distances below
// max_exact = nb / 2 have one each; longer ones share logarithmically wider buckets up to
// max_distance, past which all fall in the last; bidirectional (encoder) buckets spend half of
// them (nb = buckets / 2) on keys after the query, causal (decoder) ones (nb = buckets) map
// every later key to bucket 0.
// Not in the kernel list (lib/src/kernel_list.def): a table filled once, and a gather that adds
// one table entry per score, one scalar body for every build (src/kernels/scalar).

#include <cstddef>

#include "emha/status.hpp"

namespace emha {

// HF's _relative_position_bucket(relative_position, bidirectional, num_buckets, max_distance) for
// relative_position = key position - query position, with its float32 arithmetic: the log
// bucket is max_exact + long(log(float(n) / max_exact) / float(ln(max_distance / max_exact)) *
// (nb - max_exact)), truncated, at most nb - 1.
std::size_t relative_bucket(std::ptrdiff_t relative_position, std::size_t buckets, std::size_t max_distance,
                            bool bidirectional) noexcept;

// The bucket of each distance n = 0 .. max_distance (max_distance + 1 floats, integers) within
// its half: relative_bucket's for n <= 0 (causal: -n), without the bidirectional half's offset.
// Past max_distance every distance is in bucket nb - 1. invalid_argument unless max_distance
// exceeds max_exact and buckets >= 2 (>= 4 bidirectional).
Status relative_bucket_table_f32(std::size_t buckets, std::size_t max_distance, bool bidirectional,
                                 float* table) noexcept;

// A filled bucket table and the learned bias it indexes.
struct RelativeBias {
  const float* distance_bucket = nullptr;  // [max_distance + 1] (relative_bucket_table_f32)
  const float* table = nullptr;            // [buckets, heads]: T5's relative_attention_bias.weight
  std::size_t buckets = 0, max_distance = 0, heads = 0;
  bool bidirectional = false;
};

// s[i][j] += rb.table[bucket(j - i - diagonal) * heads + h], the key's position minus the query's
// with `diagonal` as in mask_causal_f32 (query row 0's position minus key column 0's), so a
// score tile of the fused path gets its part without any [S_q x S_kv] bias existing.
void mask_relative_bias_f32(std::size_t rows, std::size_t cols, std::ptrdiff_t diagonal, const RelativeBias& rb,
                            std::size_t h, float* s, std::size_t lds) noexcept;

}  // namespace emha

// SPDX-License-Identifier: Apache-2.0
// T5's relative position buckets and bias (emha/kernels/relative_bias.hpp): compiled once, one
// scalar body (no instruction-set variants).

#include <cmath>

#include "emha/kernels/relative_bias.hpp"

namespace emha {
namespace {

// The buckets of one half (nb) and their exact part (max_exact).
struct Half {
  std::size_t nb, max_exact;
};
Half half_of(std::size_t buckets, bool bidirectional) noexcept {
  const std::size_t nb = bidirectional ? buckets / 2 : buckets;
  return {nb, nb / 2};
}

// Bucket of distance n >= 0 within a half, in PyTorch's float32 as HF computes it: the tensor
// ops round to float, the Python double ln(max_distance / max_exact) is a float scalar.
std::size_t distance_bucket(std::size_t n, Half half, std::size_t max_distance) noexcept {
  if (n < half.max_exact) return n;
  const float ln_range = float(std::log(double(max_distance) / double(half.max_exact)));
  const float x = std::log(float(n) / float(half.max_exact)) / ln_range * float(half.nb - half.max_exact);
  const std::size_t large = half.max_exact + (x < float(half.nb) ? std::size_t(x) : half.nb);
  return large < half.nb - 1 ? large : half.nb - 1;
}

// Where relative position rel falls: its distance n within a half, and the half's first bucket
// (bidirectional: keys after the query in the upper half; causal: every later key at distance 0).
struct Split {
  std::size_t n, first;
};
Split split(std::ptrdiff_t rel, Half half, bool bidirectional) noexcept {
  const bool after = rel > 0;
  const std::size_t n = after ? std::size_t(rel) : std::size_t(0) - std::size_t(rel);
  if (!bidirectional) return {after ? 0 : n, 0};
  return {n, after ? half.nb : 0};
}

bool valid(std::size_t buckets, std::size_t max_distance, bool bidirectional) noexcept {
  const Half half = half_of(buckets, bidirectional);
  return half.nb >= 2 && max_distance > half.max_exact;
}

}  // namespace

std::size_t relative_bucket(std::ptrdiff_t relative_position, std::size_t buckets, std::size_t max_distance,
                            bool bidirectional) noexcept {
  const Half half = half_of(buckets, bidirectional);
  const Split at = split(relative_position, half, bidirectional);
  return at.first + distance_bucket(at.n, half, max_distance);
}

Status relative_bucket_table_f32(std::size_t buckets, std::size_t max_distance, bool bidirectional,
                                 float* table) noexcept {
  if (!table) return Status::null_pointer;
  if (!valid(buckets, max_distance, bidirectional)) return Status::invalid_argument;
  const Half half = half_of(buckets, bidirectional);
  for (std::size_t n = 0; n <= max_distance; ++n) table[n] = float(distance_bucket(n, half, max_distance));
  return Status::ok;
}

void mask_relative_bias_f32(std::size_t rows, std::size_t cols, std::ptrdiff_t diagonal, const RelativeBias& rb,
                            std::size_t h, float* s, std::size_t lds) noexcept {
  const Half half = half_of(rb.buckets, rb.bidirectional);
  const float* column = rb.table + h;  // bucket b's bias at column[b * heads]
  for (std::size_t i = 0; i < rows; ++i) {
    float* row = s + i * lds;
    // key j's position minus query i's: j - i - diagonal
    const std::ptrdiff_t first = -std::ptrdiff_t(i) - diagonal;
    for (std::size_t j = 0; j < cols; ++j) {
      const Split at = split(first + std::ptrdiff_t(j), half, rb.bidirectional);
      const std::size_t b = at.n <= rb.max_distance ? std::size_t(rb.distance_bucket[at.n]) : half.nb - 1;
      row[j] += column[(at.first + b) * rb.heads];
    }
  }
}

}  // namespace emha

// SPDX-License-Identifier: Apache-2.0
#pragma once
// What emha-run (emha_run.cpp, Linux) and its Cortex-M form (emha_run_m.cpp) both compute for an
// exported layer of Config C: the reference check's error budget and outcome, and the FLOPs of a
// forward. No heap, no library beyond <cmath>: it builds for both.

#include <cmath>
#include <cstddef>

#include "emha/attention/config.hpp"

namespace emha::run {

// The float32 budget of the suite (tests/attention/seed_support.hpp): |emha - ref| <= tol *
// (1 + |ref|), for dot products of lengths d_model (projection), d_k (scores), S_kv (P V),
// d_model (output projection) and a norm's two row reductions.
template <class C>
constexpr double tolerance(std::size_t s_kv) noexcept {
  const std::size_t norm = C::norm != NormPlacement::none ? 2 * C::d_model : 0;
  return 4.0 * double(2 * C::d_model + C::d_model / C::heads + s_kv + norm) / 16777216.0;
}

struct ReferenceErrors {
  double worst = 0;   // max |y - ref|
  double excess = 0;  // max |y - ref| / (tolerance (1 + |ref|)): within the budget when <= 1
};

// y against the exporter's reference output, both [rows, d_model] (self-attention: S_kv = rows).
template <class C>
ReferenceErrors reference_errors(const float* y, const float* ref, std::size_t rows) noexcept {
  const double tol = tolerance<C>(rows);
  ReferenceErrors r;
  for (std::size_t i = 0; i < rows * C::d_model; ++i) {
    const double e = std::fabs(double(y[i]) - double(ref[i]));
    if (e > r.worst) r.worst = e;
    const double x = e / (tol * (1.0 + std::fabs(double(ref[i]))));
    if (x > r.excess) r.excess = x;
  }
  return r;
}

// FLOPs of one forward over s queries and s_kv keys, batch 1: the Q and output projections, the
// K and V projections, scale Q K^T and P V (2 per multiply-add).
template <class C>
constexpr double forward_flops(std::size_t s, std::size_t s_kv) noexcept {
  const double d = double(C::d_model), kv = double(C::kv_heads) * double(C::d_model / C::heads);
  return 4.0 * double(s) * d * d + 2.0 * double(s_kv) * kv * double(C::kdim + C::vdim) +
         4.0 * double(s) * double(s_kv) * d;
}

}  // namespace emha::run

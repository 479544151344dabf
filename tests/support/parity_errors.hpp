// SPDX-License-Identifier: Apache-2.0
#pragma once
// A kernel's output against a PyTorch fixture F (F::out, torch's float32 result; F::out_f64, the
// float64 truth): the max errors the parity criterion compares (emha's within 2x torch's).

#include <cmath>
#include <cstddef>

namespace emha::test {

struct ParityErrors {
  double mine = 0;      // max |y - truth|
  double theirs = 0;    // max |torch - truth|
  double vs_torch = 0;  // max |y - torch|
  double top = 0;       // max |truth|
};

// Explicit maxima, not std::fmax: aarch64 GCC 12 vectorized that reduction into an internal
// compiler error.
template <class F>
ParityErrors parity_errors(const float* y, std::size_t count) {
  ParityErrors e;
  for (std::size_t i = 0; i < count; ++i) {
    const double m = std::fabs(y[i] - F::out_f64[i]), o = std::fabs(F::out[i] - F::out_f64[i]);
    const double v = std::fabs(double(y[i]) - double(F::out[i])), a = std::fabs(F::out_f64[i]);
    if (m > e.mine) e.mine = m;
    if (o > e.theirs) e.theirs = o;
    if (v > e.vs_torch) e.vs_torch = v;
    if (a > e.top) e.top = a;
  }
  return e;
}

}  // namespace emha::test

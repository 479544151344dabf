// SPDX-License-Identifier: Apache-2.0
// sinusoidal_table_f32 (emha/kernels/sinusoidal.hpp): once per model, compiled once.

#include <cmath>

#include "emha/kernels/sinusoidal.hpp"

namespace emha {

Status sinusoidal_table_f32(std::size_t positions, std::size_t d_model, float* pe) noexcept {
  if (d_model == 0 || d_model % 2 != 0) return Status::invalid_argument;
  if (positions != 0 && !pe) return Status::null_pointer;
  for (std::size_t i = 0; i < d_model / 2; ++i) {
    const double denominator = std::pow(10000.0, double(2 * i) / double(d_model));
    for (std::size_t p = 0; p < positions; ++p) {
      const double angle = double(p) / denominator;
      pe[p * d_model + 2 * i] = float(std::sin(angle));
      pe[p * d_model + 2 * i + 1] = float(std::cos(angle));
    }
  }
  return Status::ok;
}

}  // namespace emha

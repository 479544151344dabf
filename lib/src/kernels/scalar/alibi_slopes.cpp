// SPDX-License-Identifier: Apache-2.0
// alibi_slopes (emha/kernels/mask.hpp): once per model, compiled once (no instruction-set variants).

#include <cmath>

#include "emha/kernels/mask.hpp"

namespace emha {
namespace {

// Slope i of n (n a power of two), as get_slopes_power_of_2: start = 2^(-2^-(log2(n) - 3)),
// slope = start * start ** i, in double. log2(n) is the exact integer math.log2 gives for a power
// of two, counted here (no libm log2: one function fewer in a firmware image).
double power_of_two_slope(std::size_t n, std::size_t i) noexcept {
  int log2_n = 0;
  while ((std::size_t(1) << log2_n) < n) ++log2_n;
  const double start = std::pow(2.0, -std::pow(2.0, -(double(log2_n) - 3.0)));
  return start * std::pow(start, double(i));
}

}  // namespace

Status alibi_slopes(std::size_t heads, float* slopes) noexcept {
  if (heads == 0) return Status::invalid_argument;
  if (!slopes) return Status::null_pointer;
  std::size_t closest = 1;  // 2^floor(log2(heads))
  while (closest <= heads / 2) closest *= 2;
  for (std::size_t i = 0; i < closest; ++i) slopes[i] = float(power_of_two_slope(closest, i));
  for (std::size_t k = 0; closest + k < heads; ++k)  // get_slopes(2c)[0::2][:n - c]
    slopes[closest + k] = float(power_of_two_slope(2 * closest, 2 * k));
  return Status::ok;
}

}  // namespace emha

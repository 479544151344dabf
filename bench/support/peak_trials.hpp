// SPDX-License-Identifier: Apache-2.0
#pragma once
// The trials of a peak loop (peak_flops.cpp, peak_int8.cpp): warm-up (clock ramp, page-in), a
// trial sized to ~5 ms, then 31 trials; the best is the peak (noise only lowers a trial), the
// median says how steady the core was.

#include <algorithm>
#include <cstdint>

namespace emha_bench {

struct PeakTrials {
  double best = 0.0, median = 0.0;  // 1e9 operations per second
  std::uint64_t iters = 0;          // loop iterations of one trial
};

// `seconds(iters)` runs the loop and returns its elapsed seconds; it does `op_per_iter` per iteration.
template <class Loop>
PeakTrials run_peak_trials(Loop seconds, double op_per_iter) noexcept {
  std::uint64_t iters = 1 << 16;
  while (seconds(iters) < 0.02 && iters < (std::uint64_t(1) << 40)) iters *= 2;
  iters = std::max<std::uint64_t>(iters / 4, 1);
  constexpr int kTrials = 31;
  double rate[kTrials];
  for (double& r : rate) r = op_per_iter * double(iters) / seconds(iters) * 1e-9;
  std::sort(rate, rate + kTrials);
  return {rate[kTrials - 1], rate[kTrials / 2], iters};
}

}  // namespace emha_bench

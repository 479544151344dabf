// SPDX-License-Identifier: Apache-2.0
#include "support/counters.hpp"

namespace emha_bench {
namespace {
double g_peak_gflops = 0.0;
}

double peak_gflops() noexcept { return g_peak_gflops; }
void set_peak_gflops(double gflops) noexcept { g_peak_gflops = gflops; }

void set_flop_counters(benchmark::State& state, double flop_per_iteration) {
  using benchmark::Counter;
  const double gflop = flop_per_iteration * 1e-9;
  // kIsIterationInvariantRate = kIsRate | kIsIterationInvariant: value * iterations / seconds.
  state.counters["GFLOPS"] = Counter(gflop, Counter::kIsIterationInvariantRate);
  if (g_peak_gflops > 0.0)
    state.counters["peak_frac"] = Counter(gflop / g_peak_gflops, Counter::kIsIterationInvariantRate);
}

}  // namespace emha_bench

// SPDX-License-Identifier: Apache-2.0
#include "support/counters.hpp"

namespace emha_bench {
namespace {
double g_peak_gflops = 0.0;
double g_int8_peak_gops = 0.0;
}

double int8_peak_gops() noexcept { return g_int8_peak_gops; }
void set_int8_peak_gops(double gops) noexcept { g_int8_peak_gops = gops; }

void set_int8_counters(benchmark::State& state, double op_per_iteration) {
  set_flop_counters(state, op_per_iteration);
  if (g_int8_peak_gops > 0.0)
    state.counters["int8_peak_frac"] =
        benchmark::Counter(op_per_iteration * 1e-9 / g_int8_peak_gops, benchmark::Counter::kIsIterationInvariantRate);
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

// SPDX-License-Identifier: Apache-2.0
#pragma once
// The FLOP-rate counters every benchmark reports, relative to the FMA peak measured at start-up.

#include <benchmark/benchmark.h>

namespace emha_bench {

// The start-up FMA peak of this process in 1e9 FLOP/s (run_benchmarks sets it before any
// benchmark runs; 0 until then).
double peak_gflops() noexcept;
void set_peak_gflops(double gflops) noexcept;

// Adds the counters of a benchmark doing `flop_per_iteration` FLOP per iteration:
//   GFLOPS    1e9 FLOP per second (Counter::kIsRate: over the thread's CPU time)
//   peak_frac GFLOPS / peak_gflops(), 1.0 = every FMA pipe busy every cycle
void set_flop_counters(benchmark::State& state, double flop_per_iteration);

// The start-up int8 multiply-add peak in 1e9 operations/s (0 where the bench has none), and the
// counters of a benchmark doing `op_per_iteration` int8 operations per iteration: GFLOPS and
// peak_frac as set_flop_counters (the float peak), and
//   int8_peak_frac  the rate / int8_peak_gops(), 1.0 = the int8 dot-product pipes busy every cycle
double int8_peak_gops() noexcept;
void set_int8_peak_gops(double gops) noexcept;
void set_int8_counters(benchmark::State& state, double op_per_iteration);

}  // namespace emha_bench

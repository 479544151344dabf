// SPDX-License-Identifier: Apache-2.0
#pragma once
// The shared main of the benchmark binaries: Google Benchmark's flags, the start-up FMA peak,
// peer set-up, context entries, and the per-benchmark medians for a binary's own summary.
//
//   int main(int argc, char** argv) {
//     emha_bench::BenchRun run(argc, argv);  // flags, FMA peak, peers, context
//     if (run.status != 0) return run.status;
//     register_my_benchmarks();              // may print checks to run.text
//     run.run();
//     ... print a summary from run.results to run.text ...
//     return run.status;
//   }

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "support/peak_flops.hpp"

namespace emha_bench {

// One benchmark's result: medians over its repetitions (the single run without repetitions).
// Time is the benchmark thread's CPU time (Google Benchmark's default, no UseRealTime()): on an
// idle core it equals wall time, and on a shared, busy machine it leaves out the time the thread
// was preempted, which is noise, not the code's cost. Every implementation here is
// single-threaded, so no work runs on threads this clock misses. Real time is in the JSON too.
struct Measured {
  double time_s = 0.0;                   // CPU seconds per iteration (wall: UseRealTime ones)
  std::map<std::string, double> counters;  // user counters (GFLOPS, peak_frac, ...), final values
  std::string error;                     // SkipWithError message, empty if it ran
};

// The FMA peaks a summary divides by, GFLOP/s (0: not measured). startup_best and run_median
// are the peak of the instruction set emha's kernels run (emha::simd_isa()); machine_best is the
// best start-up peak of any instruction set the CPU has (on a Zen 5 AVX-512's, twice AVX2's).
struct Peaks {
  double startup_best = 0.0;  // best of the 31 start-up trials
  double run_median = 0.0;    // median of the interleaved `fma_peak` benchmark
  double machine_best = 0.0;  // best start-up trial of the widest-FLOP instruction set
  // The core's ceiling in emha's instruction set, for "% peak": noise only lowers an FMA loop,
  // so the higher of the two. (A slow phase can span all of the start-up trials; seen here:
  // 72.8 at start-up, 100.2 in the run.)
  double ceiling() const { return startup_best > run_median ? startup_best : run_median; }
  // The machine's ceiling, for "% best": never below the ceiling above.
  double best() const { return machine_best > ceiling() ? machine_best : ceiling(); }
};

class BenchRun {
 public:
  // Parses argv (Google Benchmark flags; status 1 on an unknown one or a format other than
  // console and json), measures the FMA peaks, sets the peers up and adds context entries
  // (fma_peak_gflops and fma_peak_isa: emha's instruction set; fma_peak_best_gflops and
  // fma_peak_best_isa; fma_peak_<isa>_gflops for each; emha_simd_isa, peers), also printed as
  // lines on `text`, and registers the `fma_peak` benchmark (emha's instruction set's loop).
  BenchRun(int argc, char** argv);

  // Runs the registered benchmarks, fills `results`; status 1 if one reported an error.
  void run();

  // Median GFLOP/s of the `fma_peak` benchmark (the start-up loop, registered by the
  // constructor and interleaved with the others when the run shuffles repetitions); 0 if it
  // did not run (--benchmark_filter).
  double run_peak_gflops() const;
  Peaks peaks() const { return {peak.gflops, run_peak_gflops(), best.gflops}; }

  int status = 0;                           // exit status of the binary
  std::map<std::string, Measured> results;  // by benchmark name as registered
  std::vector<FmaPeak> all_peaks;  // every instruction set's (support/peaks.cpp)
  FmaPeak peak;  // the one of emha's kernels (the build's vector width if the bench has none)
  FmaPeak best;  // the highest of all_peaks
  std::FILE* text = stdout;  // human-readable lines: stderr when stdout carries JSON

 private:
  std::string format_;  // --benchmark_format
};

extern const char* const kRunPeakBenchmark;  // "fma_peak"

// The median of v (the mean of the middle two for an even count); 0 for an empty v.
double median(std::vector<double> v);

}  // namespace emha_bench

// SPDX-License-Identifier: Apache-2.0
#pragma once
// A tick-based benchmark runner for bare-metal targets, where Google Benchmark (which needs an
// OS) cannot run: times a callable with emha::port::cycles() and prints one line per benchmark
// over semihosting. Each benchmark runs once to warm up, then repeatedly until both `min_reps`
// calls and `min_seconds` of the port's clock have passed; the mean is reported.
//
//   emha::device_bench::run("gemm_f32 64x64x64", 2.0 * 64 * 64 * 64, [] { ... });

#include <cstdint>

#include "console.hpp"
#include "emha/port.hpp"

namespace emha::device_bench {

struct Settings {
  std::uint32_t min_reps = 3;
  double min_seconds = 0.05;
  std::uint32_t max_reps = 1000;
};

struct Result {
  std::uint32_t reps = 0;
  std::uint64_t cycles = 0;  // all reps together
  double cycles_per_call() const noexcept { return reps ? double(cycles) / double(reps) : 0.0; }
};

template <class Fn>
Result measure(Fn&& fn, const Settings& s = {}) noexcept {
  fn();  // warm-up: caches, branch predictors, lazy start of the cycle counter
  const double hz = double(port::cycles_per_second());
  const std::uint64_t min_cycles = hz > 0 ? static_cast<std::uint64_t>(s.min_seconds * hz) : 0;
  Result r;
  const std::uint64_t start = port::cycles();
  do {
    fn();
    ++r.reps;
    r.cycles = port::cycles() - start;
  } while (r.reps < s.max_reps && (r.reps < s.min_reps || r.cycles < min_cycles));
  return r;
}

// "<name>: <cycles>/call, <us> us, <flops/cycle> FLOP/cycle (<reps> reps)"; flops = 0 omits it.
inline void report(const char* name, const Result& r, double flops) noexcept {
  const double per_call = r.cycles_per_call();
  const double hz = double(port::cycles_per_second());
  cortex_m::Line line;
  line << name << ": " << per_call << " cycles/call";
  if (hz > 0) line << ", " << per_call / hz * 1e6 << " us";
  if (flops > 0 && per_call > 0) line << ", " << flops / per_call << " FLOP/cycle";
  line << " (" << r.reps << " reps)";
}

template <class Fn>
void run(const char* name, double flops, Fn&& fn, const Settings& s = {}) noexcept {
  report(name, measure(fn, s), flops);
}

}  // namespace emha::device_bench

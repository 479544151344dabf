#pragma once
// The machine's single-core f32 FMA peak, measured in this process: an FMA throughput loop over
// many independent accumulator chains in the build's vector width (bench/support/peak_flops.cpp).

#include <cstddef>
#include <cstdint>

namespace emha_bench {

struct FmaPeak {
  double gflops = 0.0;         // best trial, 1e9 FLOP/s (one FMA = 2 FLOP per lane)
  double median_gflops = 0.0;  // median trial, 1e9 FLOP/s: how steady the core was
  const char* isa = "";        // xsimd architecture the loop ran in ("fma3+avx2", "scalar", ...)
  std::size_t lanes = 0;       // f32 lanes per vector
  std::size_t chains = 0;      // independent accumulators (enough to hide FMA latency)
  std::uint64_t trial_iters = 0;  // loop iterations of one ~5 ms trial
};

// Runs ~0.2 s of FMA loops (warm-up included) and returns the peak; single-threaded.
FmaPeak measure_fma_peak() noexcept;

// The same loop as a timed body (the `fma_peak` benchmark, bench_main.cpp): runs `iters`
// iterations and returns the FLOP they did.
double run_fma_loop(std::uint64_t iters) noexcept;

}  // namespace emha_bench

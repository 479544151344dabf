// SPDX-License-Identifier: Apache-2.0
#pragma once
// The machine's single-core f32 FMA peaks, measured in this process: an FMA throughput loop over
// many independent accumulator chains, once per vector instruction set the CPU has
// (bench/support/peak_flops.cpp, compiled per instruction set; peaks.cpp picks them).

#include <cstddef>
#include <cstdint>
#include <vector>

namespace emha_bench {

struct FmaPeak {
  double gflops = 0.0;         // best trial, 1e9 FLOP/s (one FMA = 2 FLOP per lane)
  double median_gflops = 0.0;  // median trial, 1e9 FLOP/s: how steady the core was
  const char* isa = "";        // xsimd architecture the loop ran in (emha::simd_isa()'s names: "avx2", "avx512", ...)
  std::size_t lanes = 0;       // f32 lanes per vector
  std::size_t chains = 0;      // independent accumulators (enough to hide FMA latency)
  std::uint64_t trial_iters = 0;  // loop iterations of one ~5 ms trial
  // The same loop as a timed body (the `fma_peak` benchmark, bench_main.cpp): runs `iters`
  // iterations and returns the FLOP they did.
  double (*run)(std::uint64_t iters) noexcept = nullptr;
};

// Every FMA peak this CPU has among those the bench carries: on x86-64 AVX2+FMA (the bench's
// build flags) and AVX-512 (F/CD/DQ/BW/VL, where the CPU has them); elsewhere the build's vector
// width only. Each runs ~0.2 s (warm-up included), single-threaded. Never empty.
std::vector<FmaPeak> measure_fma_peaks();

// The peak of `isa` in `peaks` (null if absent), and the highest of all (the machine's ceiling).
const FmaPeak* find_peak(const std::vector<FmaPeak>& peaks, const char* isa) noexcept;
const FmaPeak& best_peak(const std::vector<FmaPeak>& peaks) noexcept;

// One instruction set's loop (peak_flops.cpp, compiled once per namespace).
namespace peak_build {
FmaPeak measure_fma_peak() noexcept;
double run_fma_loop(std::uint64_t iters) noexcept;
}  // namespace peak_build
namespace peak_avx512 {
FmaPeak measure_fma_peak() noexcept;
double run_fma_loop(std::uint64_t iters) noexcept;
}  // namespace peak_avx512

// The int8 multiply-add peak of the instruction the full-integer layer's products run on
// (peak_int8.cpp: VPDPBUSD on x86-64, 512 bits with AVX-512 VNNI, 256 with AVX-VNNI), one core;
// gops 0 and isa "" where the bench has no such loop for the variant in use (ARM, x86-64 without
// VNNI).
struct Int8Peak {
  double gops = 0.0;         // best trial, 1e9 int8 operations/s (one multiply-add = 2)
  double median_gops = 0.0;  // median trial
  const char* isa = "";      // the variant emha::simd_isa_s8() names with the same instructions
};
Int8Peak measure_int8_peak();
namespace peak_avx512vnni {
Int8Peak measure_int8_peak() noexcept;
}  // namespace peak_avx512vnni
namespace peak_avx2vnni {
Int8Peak measure_int8_peak() noexcept;
}  // namespace peak_avx2vnni

}  // namespace emha_bench

// SPDX-License-Identifier: Apache-2.0
// The int8 multiply-add peak of the instruction the full-integer layer's products run on x86-64
// with AVX-512 VNNI (gemm_s8: VPDPBUSD on 512 bits, 64 multiply-adds), measured as peak_flops.cpp
// measures the FMA's: kChains independent accumulators, so the loop runs at the issue rate, not
// the latency. Compiled with AVX-512 VNNI's flags (bench/CMakeLists.txt), run only where the CPU
// has them (measure_int8_peak in peaks.cpp).

#include <immintrin.h>

#include <chrono>
#include <cstdint>

#include "support/peak_flops.hpp"
#include "support/peak_trials.hpp"

namespace emha_bench::peak_avx512vnni {
namespace {

constexpr std::size_t kChains = 12;  // VPDPBUSD latency (5) x pipes (2), as the FMA loop's 12
volatile std::int32_t g_sink = 0;    // volatile: the compiler cannot drop the chains

// Runs `iters` iterations of kChains VPDPBUSD and returns the elapsed seconds. The chains named:
// GCC 12 keeps an array of them in memory, a store after each instruction.
double vnni_loop_seconds(std::uint64_t iters) noexcept {
  const __m512i u = _mm512_set1_epi8(3), s = _mm512_set1_epi8(-5);
  __m512i c0 = _mm512_set1_epi32(0), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0, c8 = c0,
          c9 = c0, c10 = c0, c11 = c0;
  const auto t0 = std::chrono::steady_clock::now();
  for (std::uint64_t i = 0; i < iters; ++i)
    __asm__ volatile(
        "vpdpbusd %12, %13, %0\n\tvpdpbusd %12, %13, %1\n\tvpdpbusd %12, %13, %2\n\tvpdpbusd %12, %13, %3\n\t"
        "vpdpbusd %12, %13, %4\n\tvpdpbusd %12, %13, %5\n\tvpdpbusd %12, %13, %6\n\tvpdpbusd %12, %13, %7\n\t"
        "vpdpbusd %12, %13, %8\n\tvpdpbusd %12, %13, %9\n\tvpdpbusd %12, %13, %10\n\tvpdpbusd %12, %13, %11"
        : "+v"(c0), "+v"(c1), "+v"(c2), "+v"(c3), "+v"(c4), "+v"(c5), "+v"(c6), "+v"(c7), "+v"(c8), "+v"(c9),
          "+v"(c10), "+v"(c11)
        : "v"(s), "v"(u));
  const auto t1 = std::chrono::steady_clock::now();
  const __m512i all[kChains] = {c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11};
  __m512i sum = all[0];
  for (std::size_t c = 1; c < kChains; ++c) sum = _mm512_add_epi32(sum, all[c]);
  alignas(64) std::int32_t lanes[16];
  _mm512_store_si512(lanes, sum);
  g_sink = lanes[0];
  return std::chrono::duration<double>(t1 - t0).count();
}

}  // namespace

Int8Peak measure_int8_peak() noexcept {
  const PeakTrials t = run_peak_trials(vnni_loop_seconds, 2.0 * 64 * kChains);  // a multiply-add: 2 operations
  Int8Peak p;
  p.gops = t.best;
  p.median_gops = t.median;
  p.isa = "avx512vnni";
  return p;
}

}  // namespace emha_bench::peak_avx512vnni

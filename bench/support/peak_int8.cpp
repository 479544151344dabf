// SPDX-License-Identifier: Apache-2.0
// The int8 multiply-add peak of the instruction the full-integer layer's products run on x86-64
// (gemm_s8: VPDPBUSD), measured as peak_flops.cpp measures the FMA's: kChains independent
// accumulators, so the loop runs at the issue rate, not the latency. Compiled twice
// (bench/CMakeLists.txt): with AVX-512 VNNI's flags (512 bits, 64 multiply-adds; namespace
// peak_avx512vnni) and with AVX-VNNI's (256 bits, 32, VEX-encoded; peak_avx2vnni), each run only
// where the CPU has it and the layer's kernels use it (measure_int8_peak in peaks.cpp).

#include <immintrin.h>

#include <chrono>
#include <cstdint>
#include <cstring>

#include "support/peak_flops.hpp"
#include "support/peak_trials.hpp"

#if defined(__AVX512VNNI__)
#define EMHA_PEAK_INT8_NS peak_avx512vnni
#define EMHA_PEAK_INT8_VPDPBUSD "vpdpbusd "
using Vec = __m512i;
inline Vec splat8(char v) noexcept { return _mm512_set1_epi8(v); }
inline Vec add32(Vec a, Vec b) noexcept { return _mm512_add_epi32(a, b); }
constexpr const char* isa = "avx512vnni";
#else
#define EMHA_PEAK_INT8_NS peak_avx2vnni
#define EMHA_PEAK_INT8_VPDPBUSD "%{vex%} vpdpbusd "  // braces escaped: asm's dialect alternatives
using Vec = __m256i;
inline Vec splat8(char v) noexcept { return _mm256_set1_epi8(v); }
inline Vec add32(Vec a, Vec b) noexcept { return _mm256_add_epi32(a, b); }
constexpr const char* isa = "avx2vnni";
#endif

namespace emha_bench::EMHA_PEAK_INT8_NS {
namespace {

constexpr std::size_t kLanes = sizeof(Vec) / 4;  // dwords; 4 multiply-adds each

constexpr std::size_t kChains = 12;  // VPDPBUSD latency (5) x pipes (2), as the FMA loop's 12
volatile std::int32_t g_sink = 0;    // volatile: the compiler cannot drop the chains

// Runs `iters` iterations of kChains VPDPBUSD and returns the elapsed seconds. The chains named:
// GCC 12 keeps an array of them in memory, a store after each instruction.
double vnni_loop_seconds(std::uint64_t iters) noexcept {
  const Vec u = splat8(3), s = splat8(-5);
  Vec c0{}, c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0, c8 = c0,
          c9 = c0, c10 = c0, c11 = c0;
  const auto t0 = std::chrono::steady_clock::now();
  for (std::uint64_t i = 0; i < iters; ++i)
    __asm__ volatile(
#define EMHA_D(c) EMHA_PEAK_INT8_VPDPBUSD "%12, %13, %" #c "\n\t"
        EMHA_D(0) EMHA_D(1) EMHA_D(2) EMHA_D(3) EMHA_D(4) EMHA_D(5) EMHA_D(6) EMHA_D(7) EMHA_D(8) EMHA_D(9)
        EMHA_D(10) EMHA_D(11)
#undef EMHA_D
        : "+v"(c0), "+v"(c1), "+v"(c2), "+v"(c3), "+v"(c4), "+v"(c5), "+v"(c6), "+v"(c7), "+v"(c8), "+v"(c9),
          "+v"(c10), "+v"(c11)
        : "v"(s), "v"(u));
  const auto t1 = std::chrono::steady_clock::now();
  const Vec all[kChains] = {c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11};
  Vec sum = all[0];
  for (std::size_t c = 1; c < kChains; ++c) sum = add32(sum, all[c]);
  std::int32_t lanes[kLanes];
  std::memcpy(lanes, &sum, sizeof sum);
  g_sink = lanes[0];
  return std::chrono::duration<double>(t1 - t0).count();
}

}  // namespace

Int8Peak measure_int8_peak() noexcept {
  const PeakTrials t = run_peak_trials(vnni_loop_seconds, 2.0 * 4 * kLanes * kChains);  // a multiply-add: 2 operations
  Int8Peak p;
  p.gops = t.best;
  p.median_gops = t.median;
  p.isa = isa;
  return p;
}

}  // namespace emha_bench::EMHA_PEAK_INT8_NS

// SPDX-License-Identifier: Apache-2.0
// FMA throughput loop: `chains` independent accumulators acc = acc * a + b, each an FMA of one
// vector, so the loop runs at the core's FMA issue rate instead of its FMA latency. Compiled once
// per instruction set the bench measures (bench/CMakeLists.txt), each time in the namespace
// EMHA_BENCH_PEAK_NS: with the bench's flags (AVX2+FMA on x86, NEON on ARM, one lane where xsimd
// has no architecture: armv6, armv7 without NEON), and on x86-64 with AVX-512's as well
// (peaks.cpp runs each that the CPU has).
//
// This file is the one place in bench/ that asks which SIMD architecture the build has.

#include "support/peak_flops.hpp"
#include "support/peak_trials.hpp"

#include <chrono>
#include <cstdint>
#include <type_traits>

#if __has_include(<xsimd/config/xsimd_config.hpp>)
#include <xsimd/config/xsimd_config.hpp>
#if !defined(XSIMD_NO_SUPPORTED_ARCHITECTURE)
#define EMHA_BENCH_PEAK_XSIMD 1
#include <xsimd/xsimd.hpp>
#endif
#endif

#ifndef EMHA_BENCH_PEAK_NS
#define EMHA_BENCH_PEAK_NS peak_build
#endif

namespace emha_bench::EMHA_BENCH_PEAK_NS {
namespace {

#if defined(EMHA_BENCH_PEAK_XSIMD)
using Vec = xsimd::batch<float>;  // the build's default architecture
inline Vec fma(Vec a, Vec b, Vec c) noexcept { return xsimd::fma(a, b, c); }
inline float first_lane(Vec v) noexcept { return xsimd::hadd(v); }
// As emha::simd_isa() names the variant of the same architecture.
const char* vec_isa() noexcept {
  using A = xsimd::default_arch;
  if (std::is_same<A, xsimd::avx512bw>::value) return "avx512";
  if (std::is_same<A, xsimd::fma3<xsimd::avx2>>::value) return "avx2";
  return A::name();
}
#else
struct Vec {  // one lane; a * b + c contracts to a hardware FMA where the FPU has one
  static constexpr std::size_t size = 1;
  float v;
  explicit Vec(float x = 0.0f) noexcept : v(x) {}
};
inline Vec fma(Vec a, Vec b, Vec c) noexcept { return Vec(a.v * b.v + c.v); }
inline float first_lane(Vec v) noexcept { return v.v; }
const char* vec_isa() noexcept { return "scalar"; }
#endif

// Chains: FMA latency x FMA pipes, within the register file (16 vector registers on x86-64 AVX2
// and armv7, 32 on aarch64). 12 covers 2 pipes x 4-5 cycles (Zen, Skylake); aarch64 cores have
// longer FMA latency (Cortex-A72: 7 cycles, 2 pipes).
#if defined(__aarch64__)
constexpr std::size_t kChains = 24;
#else
constexpr std::size_t kChains = 12;
#endif

volatile float g_seed_a = 0.9999999f;  // volatile: the compiler cannot fold the chains away
volatile float g_seed_b = 1.0e-7f;
volatile float g_sink = 0.0f;

// Runs `iters` iterations of kChains FMAs and returns the elapsed seconds.
double fma_loop_seconds(std::uint64_t iters) noexcept {
  const Vec a(g_seed_a), b(g_seed_b);
  Vec acc[kChains];
  for (std::size_t c = 0; c < kChains; ++c) acc[c] = Vec(1.0f + 0.001f * float(c));
  const auto t0 = std::chrono::steady_clock::now();
  for (std::uint64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 32
    for (std::size_t c = 0; c < kChains; ++c) acc[c] = fma(acc[c], a, b);
  }
  const auto t1 = std::chrono::steady_clock::now();
  float sum = 0.0f;
  for (std::size_t c = 0; c < kChains; ++c) sum += first_lane(acc[c]);
  g_sink = sum;
  return std::chrono::duration<double>(t1 - t0).count();
}

}  // namespace

double run_fma_loop(std::uint64_t iters) noexcept {
  fma_loop_seconds(iters);
  return 2.0 * kChains * Vec::size * double(iters);
}

FmaPeak measure_fma_peak() noexcept {
  const PeakTrials t = run_peak_trials(fma_loop_seconds, 2.0 * kChains * Vec::size);
  FmaPeak p;
  p.gflops = t.best;
  p.median_gflops = t.median;
  p.isa = vec_isa();
  p.lanes = Vec::size;
  p.chains = kChains;
  p.trial_iters = t.iters;
  p.run = run_fma_loop;
  return p;
}


}  // namespace emha_bench::EMHA_BENCH_PEAK_NS

// SPDX-License-Identifier: Apache-2.0
// Which FMA peaks to measure: the bench's own vector width, and on x86-64 AVX-512 as well where
// the CPU has it (a Zen 5 runs AVX-512 FMAs at full width, twice AVX2's FLOP per cycle; a Zen 4
// at the same rate): "% peak" must be against what the machine can do, not only the build's ISA.
// And the int8 multiply-add peak of the VNNI variant the full-integer kernels run on (their limit).

#include <cstring>

#include "emha/simd.hpp"
#include "support/peak_flops.hpp"

namespace emha_bench {

std::vector<FmaPeak> measure_fma_peaks() {
  std::vector<FmaPeak> peaks{peak_build::measure_fma_peak()};
#if EMHA_BENCH_PEAK_AVX512
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl");
  if (avx512 && std::strcmp(peaks[0].isa, "avx512") != 0) peaks.push_back(peak_avx512::measure_fma_peak());
#endif
  return peaks;
}

Int8Peak measure_int8_peak() {
#if EMHA_BENCH_PEAK_AVX512
  // The variant emha chose (or --emha_isa pinned) runs only where the CPU has its instructions.
  const char* s8 = emha::simd_isa_s8();
  if (std::strcmp(s8, "avx512vnni") == 0) return peak_avx512vnni::measure_int8_peak();
  if (std::strcmp(s8, "avx2vnni") == 0) return peak_avx2vnni::measure_int8_peak();
#endif
  return {};
}

const FmaPeak* find_peak(const std::vector<FmaPeak>& peaks, const char* isa) noexcept {
  for (const FmaPeak& p : peaks)
    if (std::strcmp(p.isa, isa) == 0) return &p;
  return nullptr;
}

const FmaPeak& best_peak(const std::vector<FmaPeak>& peaks) noexcept {
  const FmaPeak* best = &peaks[0];
  for (const FmaPeak& p : peaks)
    if (p.gflops > best->gflops) best = &p;
  return *best;
}

}  // namespace emha_bench

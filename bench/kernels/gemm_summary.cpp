// SPDX-License-Identifier: Apache-2.0
#include "kernels/gemm_summary.hpp"

namespace emha_bench {
namespace {

bool is_emha(const std::string& impl) { return impl.rfind("emha", 0) == 0; }

}  // namespace

void print_gemm_summary(std::FILE* out, const std::vector<GemmSummaryRow>& rows,
                        const std::vector<std::string>& impls,
                        const std::map<std::string, Measured>& results, const Peaks& peaks) {
  if (results.empty()) return;  // nothing ran (--benchmark_filter, --benchmark_list_tests)
  std::fprintf(out,
               "\ngemm_f32 vs peers, 1 thread; medians of the repetitions. GFLOP/s = 2*M*N*K / "
               "CPU time; %% = of the %.1f GFLOP/s FMA peak of emha's instruction set\n(the higher "
               "of start-up best and run median); emha_pp = gemm_f32_prepacked (B packed once, as the "
               "attention weights are);\n<peer>/<emha> = peer time over emha time (> 1: emha is "
               "faster); %%run = of the %.1f GFLOP/s median of\nthe interleaved fma_peak benchmark; "
               "%%best = of the machine's best FMA peak in any instruction set (%.1f).\nnt: C = A B^T "
               "(x W^T), nn: C = A B\n\n",
               peaks.ceiling(), peaks.run_median, peaks.best());

  // Columns: GFLOP/s and % per implementation, then every peer over every emha variant, then
  // each emha variant's % of the run peak.
  struct Ratio {
    std::size_t peer, base;
  };
  std::vector<Ratio> ratios;
  for (std::size_t p = 0; p < impls.size(); ++p)
    for (std::size_t b = 0; b < impls.size(); ++b)
      if (!is_emha(impls[p]) && is_emha(impls[b])) ratios.push_back({p, b});

  std::fprintf(out, "%-18s", "op/MxNxK");
  for (const std::string& impl : impls) std::fprintf(out, " %10s %4s", (impl + " GF").c_str(), "%");
  for (const Ratio& r : ratios)
    std::fprintf(out, " %16s", (impls[r.peer] + "/" + impls[r.base]).c_str());
  for (const std::string& impl : impls)
    if (is_emha(impl)) std::fprintf(out, " %12s %13s", (impl + " %run").c_str(), (impl + " %best").c_str());
  std::fprintf(out, "\n");

  for (const GemmSummaryRow& row : rows) {
    std::vector<double> times;  // 0: did not run
    for (const std::string& impl : impls) {
      const auto it = results.find(row.name + "/" + impl);
      times.push_back(it == results.end() || !it->second.error.empty() ? 0.0 : it->second.time_s);
    }
    if (times[0] <= 0.0) continue;
    const auto gflops = [&](std::size_t i) { return row.flop / times[i] * 1e-9; };
    std::fprintf(out, "%-18s", row.name.c_str() + std::string("gemm_f32/").size());
    for (std::size_t i = 0; i < impls.size(); ++i) {
      if (times[i] > 0.0) {
        std::fprintf(out, " %10.1f %3.0f%%", gflops(i), 100.0 * gflops(i) / peaks.ceiling());
      } else {
        std::fprintf(out, " %10s %4s", "n/a", "");
      }
    }
    for (const Ratio& r : ratios) {
      if (times[r.peer] > 0.0 && times[r.base] > 0.0) {
        std::fprintf(out, " %15.2fx", times[r.peer] / times[r.base]);
      } else {
        std::fprintf(out, " %16s", "n/a");
      }
    }
    for (std::size_t i = 0; i < impls.size(); ++i) {
      if (!is_emha(impls[i])) continue;
      if (times[i] > 0.0 && peaks.run_median > 0.0) {
        std::fprintf(out, " %11.0f%%", 100.0 * gflops(i) / peaks.run_median);
      } else {
        std::fprintf(out, " %12s", "n/a");
      }
      if (times[i] > 0.0) {
        std::fprintf(out, " %12.0f%%", 100.0 * gflops(i) / peaks.best());
      } else {
        std::fprintf(out, " %13s", "n/a");
      }
    }
    std::fprintf(out, "\n");
  }
  std::fflush(out);
}

}  // namespace emha_bench

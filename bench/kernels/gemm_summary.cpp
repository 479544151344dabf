#include "kernels/gemm_summary.hpp"

namespace emha_bench {

void print_gemm_summary(std::FILE* out, const std::vector<GemmSummaryRow>& rows,
                        const std::vector<std::string>& impls,
                        const std::map<std::string, Measured>& results, double peak_gflops) {
  if (results.empty()) return;  // nothing ran (--benchmark_filter, --benchmark_list_tests)
  std::fprintf(out,
               "\ngemm_f32 vs peers, 1 thread; medians of the repetitions. GFLOP/s = 2*M*N*K / "
               "CPU time; %% = of the %.1f GFLOP/s FMA peak;\n<peer>/emha = peer time over emha "
               "time (> 1: emha is faster). nt: C = A B^T (x W^T), nn: C = A B\n\n",
               peak_gflops);
  std::fprintf(out, "%-26s", "op/MxNxK");
  for (const std::string& impl : impls) std::fprintf(out, " %9s %5s", (impl + " GF").c_str(), "%");
  for (std::size_t i = 1; i < impls.size(); ++i)
    std::fprintf(out, " %13s", (impls[i] + "/emha").c_str());
  std::fprintf(out, "\n");

  for (const GemmSummaryRow& row : rows) {
    std::vector<double> times;
    for (const std::string& impl : impls) {
      const auto it = results.find(row.name + "/" + impl);
      times.push_back(it == results.end() || !it->second.error.empty() ? 0.0 : it->second.time_s);
    }
    if (times[0] <= 0.0) continue;
    std::fprintf(out, "%-26s", row.name.c_str() + std::string("gemm_f32/").size());
    for (double t : times) {
      if (t > 0.0) {
        const double gflops = row.flop / t * 1e-9;
        std::fprintf(out, " %9.1f %4.0f%%", gflops, 100.0 * gflops / peak_gflops);
      } else {
        std::fprintf(out, " %9s %5s", "n/a", "");
      }
    }
    for (std::size_t i = 1; i < times.size(); ++i) {
      if (times[i] > 0.0) {
        std::fprintf(out, " %12.2fx", times[i] / times[0]);
      } else {
        std::fprintf(out, " %13s", "n/a");
      }
    }
    std::fprintf(out, "\n");
  }
  std::fflush(out);
}

}  // namespace emha_bench

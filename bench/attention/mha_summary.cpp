// SPDX-License-Identifier: Apache-2.0
#include "attention/mha_summary.hpp"

namespace emha_bench {

void print_mha_summary(std::FILE* out, const std::vector<MhaSummaryRow>& rows,
                       const std::map<std::string, Measured>& results, const Peaks& peaks) {
  // Nothing when no row's emha benchmark ran (--benchmark_filter, --benchmark_list_tests).
  bool any = false;
  for (const MhaSummaryRow& row : rows) any = any || results.count(row.name + "/emha") != 0;
  if (!any) return;
  std::fprintf(out,
               "\nemha MultiHeadAttention::forward, batch 1 self-attention, 1 thread; us = "
               "microseconds of CPU time per forward,\nmedian of the repetitions; FLOP = 8*S*D^2 + "
               "4*S^2*D; %% peak = of %.1f GFLOP/s, the higher of the FMA loop's best at start-up\n"
               "(%.1f) and its median in the run, in emha's instruction set; %% run peak = of that "
               "median (%.1f), the fma_peak\nbenchmark interleaved with these; %% best = of the "
               "machine's best FMA peak in any instruction set (%.1f)\n\n",
               peaks.ceiling(), peaks.startup_best, peaks.run_median, peaks.best());
  std::fprintf(out, "%-26s %10s %8s %7s %10s %7s %12s %13s %10s %14s\n", "config", "emha us", "GFLOP/s",
               "% peak", "% run peak", "% best", "arena bytes", "max|fwd-ref|", "eigen us", "eigen/emha");
  for (const MhaSummaryRow& row : rows) {
    const auto emha = results.find(row.name + "/emha");
    if (emha == results.end() || emha->second.time_s <= 0.0) continue;
    const double t = emha->second.time_s;
    const double gflops = row.flop / t * 1e-9;
    std::fprintf(out, "%-26s %10.1f %8.1f %6.1f%%", row.name.c_str(), t * 1e6, gflops,
                 100.0 * gflops / peaks.ceiling());
    if (peaks.run_median > 0.0) {
      std::fprintf(out, " %9.1f%%", 100.0 * gflops / peaks.run_median);
    } else {
      std::fprintf(out, " %10s", "n/a");
    }
    std::fprintf(out, " %6.1f%%", 100.0 * gflops / peaks.best());
    std::fprintf(out, " %12zu %13.2e", row.arena_bytes, row.dev_reference);
    const auto eigen = results.find(row.name + "/eigen");
    if (eigen != results.end() && eigen->second.time_s > 0.0) {
      std::fprintf(out, " %10.1f %13.2fx\n", eigen->second.time_s * 1e6,
                   eigen->second.time_s / t);
    } else {
      std::fprintf(out, " %10s %14s\n", "n/a", "n/a");
    }
  }
  std::fflush(out);
}

void print_thread_summary(std::FILE* out, const std::vector<MhaSummaryRow>& rows,
                          const std::map<std::string, Measured>& results, std::size_t workers) {
  const std::string split = "/wall/threads:" + std::to_string(workers);
  bool any = false;  // a row whose split benchmark ran (not filtered out)
  for (const MhaSummaryRow& row : rows) any = any || results.count(row.name + split) != 0;
  if (workers < 2 || !any) return;
  std::fprintf(out, "\nthreads: forward() split over %zu workers (emha::port::start_workers), wall "
               "microseconds, median of the repetitions\n\n%-26s %12s %12s %9s\n", workers,
               "config", "1 thread us", "split us", "speedup");
  for (const MhaSummaryRow& row : rows) {
    const auto one = results.find(row.name + "/wall/threads:1");
    const auto many = results.find(row.name + split);
    if (one == results.end() || many == results.end() || many->second.time_s <= 0.0) continue;
    std::fprintf(out, "%-26s %12.1f %12.1f %8.2fx\n", row.name.c_str(), one->second.time_s * 1e6,
                 many->second.time_s * 1e6, one->second.time_s / many->second.time_s);
  }
  std::fflush(out);
}

}  // namespace emha_bench

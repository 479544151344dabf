// SPDX-License-Identifier: Apache-2.0
// BenchRun: Google Benchmark's main split in two (set-up, run), plus the start-up FMA peak and a
// display reporter that keeps every benchmark's median for the binary's own summary table.

#include "support/bench_main.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include <unistd.h>

#include "emha/simd.hpp"
#include "support/counters.hpp"
#include "support/peers.hpp"

namespace emha_bench {

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

namespace {

using Run = benchmark::BenchmarkReporter::Run;

// Collects per-iteration runs and "median" aggregates by benchmark name.
class RunCollector {
 public:
  void add(const Run& r) {
    const std::string name = r.run_name.function_name +
                             (r.run_name.args.empty() ? "" : "/" + r.run_name.args);
    Series& s = series_[name];
    if (r.error_occurred) s.error = r.error_message.empty() ? "error" : r.error_message;
    // CPU time, unless the benchmark asked for wall time (UseRealTime: a split forward).
    const double adjusted = r.run_name.time_type == "real_time" ? r.GetAdjustedRealTime()
                                                                : r.GetAdjustedCPUTime();
    const double seconds = adjusted / benchmark::GetTimeUnitMultiplier(r.time_unit);
    if (r.run_type == Run::RT_Iteration) {
      s.times.push_back(seconds);
      for (const auto& c : r.counters) s.counters[c.first].push_back(c.second.value);
    } else if (r.aggregate_name == "median") {  // present when only aggregates are displayed
      s.median_time = seconds;
      for (const auto& c : r.counters) s.median_counters[c.first] = c.second.value;
    }
  }

  std::map<std::string, Measured> medians() const {
    std::map<std::string, Measured> out;
    for (const auto& [name, s] : series_) {
      Measured& m = out[name];
      m.error = s.error;
      if (s.median_time >= 0.0) {
        m.time_s = s.median_time;
        m.counters = s.median_counters;
      } else {
        m.time_s = median(s.times);
        for (const auto& [cname, values] : s.counters) m.counters[cname] = median(values);
      }
    }
    return out;
  }

 private:
  struct Series {
    std::vector<double> times;
    std::map<std::string, std::vector<double>> counters;
    double median_time = -1.0;
    std::map<std::string, double> median_counters;
    std::string error;
  };
  std::map<std::string, Series> series_;
};

// A display reporter of any format that also feeds the collector.
template <class Base>
class Capturing : public Base {
 public:
  template <class... BaseArgs>
  explicit Capturing(RunCollector& c, BaseArgs... base_args) : Base(base_args...), collector_(c) {}
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) collector_.add(r);
    // GFLOPS and the peak fractions are already rates: print "76.7", not the console's "76.7/s".
    std::vector<Run> shown = runs;
    for (Run& r : shown)
      for (auto& [name, counter] : r.counters)
        if (name == "GFLOPS" || name == "peak_frac" || name == "int8_peak_frac")
          counter.flags = benchmark::Counter::Flags(counter.flags & ~benchmark::Counter::kIsRate);
    Base::ReportRuns(shown);
  }

 private:
  RunCollector& collector_;
};

// --benchmark_format as given (Initialize() removes the flag from argv, so read it first).
std::string display_format(int argc, char** argv) {
  std::string format = "console";
  const char* key = "--benchmark_format=";
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], key, std::strlen(key)) == 0) format = argv[i] + std::strlen(key);
  return format;
}

// The FMA loop as a benchmark of its own, registered first in every binary. With
// --benchmark_enable_random_interleaving its repetitions are shuffled among everybody else's, so
// its median saw the same neighbours as theirs: "% of run peak" divides one median by the other.
// Each iteration is a fifth of a start-up trial (~1 ms).
void bm_fma_peak(benchmark::State& state, double (*loop)(std::uint64_t) noexcept, std::uint64_t iters) {
  double flop = 0.0;
  for (auto _ : state) flop = loop(iters);
  set_flop_counters(state, flop);
}

}  // namespace

const char* const kRunPeakBenchmark = "fma_peak";

double BenchRun::run_peak_gflops() const {
  const auto it = results.find(kRunPeakBenchmark);
  if (it == results.end() || !it->second.error.empty()) return 0.0;
  const auto g = it->second.counters.find("GFLOPS");
  return g == it->second.counters.end() ? 0.0 : g->second;
}

BenchRun::BenchRun(int argc, char** argv) : format_(display_format(argc, argv)) {
  // --emha_isa=NAME: emha's kernels pinned to that instruction-set variant (select_simd_isa), so
  // that it can be compared with a peer held to the same one. Taken out of argv before Google
  // Benchmark sees it.
  constexpr const char* isa_flag = "--emha_isa=";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], isa_flag, std::strlen(isa_flag)) != 0) continue;
    const char* isa = argv[i] + std::strlen(isa_flag);
    if (emha::select_simd_isa(isa) != emha::Status::ok) {
      std::fprintf(stderr, "%s: emha has no variant %s this CPU runs\n", argv[i], isa);
      status = 1;
      return;
    }
    for (int j = i; j + 1 < argc; ++j) argv[j] = argv[j + 1];
    --argc;
    --i;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
    status = 1;
    return;
  }
  if (format_ != "console" && format_ != "json") {  // CSV is deprecated in Google Benchmark
    std::fprintf(stderr, "--benchmark_format=%s: use console or json\n", format_.c_str());
    status = 1;
    return;
  }
  text = format_ == "console" ? stdout : stderr;  // keep machine-readable stdout clean

  all_peaks = measure_fma_peaks();
  const FmaPeak* own = find_peak(all_peaks, emha::simd_isa());
  peak = own ? *own : all_peaks[0];
  best = best_peak(all_peaks);
  set_peak_gflops(peak.gflops);
  const std::string peers = init_peers();
  benchmark::AddCustomContext("fma_peak_gflops", std::to_string(peak.gflops));
  benchmark::AddCustomContext("fma_peak_median_gflops", std::to_string(peak.median_gflops));
  benchmark::AddCustomContext("fma_peak_isa", peak.isa);
  benchmark::AddCustomContext("fma_peak_best_gflops", std::to_string(best.gflops));
  benchmark::AddCustomContext("fma_peak_best_isa", best.isa);
  for (const FmaPeak& p : all_peaks) {
    benchmark::AddCustomContext(std::string("fma_peak_") + p.isa + "_gflops", std::to_string(p.gflops));
    std::fprintf(text, "FMA peak (1 core, f32, %s, %zu lanes x %zu chains): %.1f GFLOP/s best, %.1f median "
                 "of 31 trials\n", p.isa, p.lanes, p.chains, p.gflops, p.median_gflops);
  }
  const Int8Peak int8 = measure_int8_peak();
  set_int8_peak_gops(int8.gops);
  if (int8.gops > 0.0) {
    benchmark::AddCustomContext("int8_peak_gops", std::to_string(int8.gops));
    benchmark::AddCustomContext("int8_peak_isa", int8.isa);
    std::fprintf(text, "int8 multiply-add peak (1 core, %s, VPDPBUSD): %.1f GOP/s best, %.1f median of 31 trials\n",
                 int8.isa, int8.gops, int8.median_gops);
  }
  benchmark::AddCustomContext("emha_simd_isa", emha::simd_isa());
  benchmark::AddCustomContext("emha_simd_isa_s8", emha::simd_isa_s8());  // the full-integer kernels' variant
  benchmark::AddCustomContext("peers", peers);
  std::fprintf(text, "machine's best FMA peak: %.1f GFLOP/s (%s)\nemha kernels: %s\npeers: %s\n",
               best.gflops, best.isa, emha::simd_isa(), peers.c_str());
  benchmark::RegisterBenchmark(kRunPeakBenchmark, bm_fma_peak, peak.run,
                               std::max<std::uint64_t>(peak.trial_iters / 5, 1))
      ->Unit(benchmark::kMicrosecond);
  if (!own)
    std::fprintf(text, "note: the bench has no FMA loop for %s; %% peak is of %s's\n",
                 emha::simd_isa(), peak.isa);
  std::fflush(text);
}

void BenchRun::run() {
  if (status != 0) return;
  RunCollector collector;
  std::unique_ptr<benchmark::BenchmarkReporter> display;
  if (format_ == "json") {
    display = std::make_unique<Capturing<benchmark::JSONReporter>>(collector);
  } else {
    using Console = benchmark::ConsoleReporter;  // colour only on a terminal, as Google Benchmark does
    display = std::make_unique<Capturing<Console>>(
        collector, isatty(STDOUT_FILENO) ? Console::OO_ColorTabular : Console::OO_Tabular);
  }
  std::fflush(text);
  benchmark::RunSpecifiedBenchmarks(display.get());
  benchmark::Shutdown();
  results = collector.medians();
  for (const auto& [name, m] : results)
    if (!m.error.empty()) status = 1;
}

}  // namespace emha_bench

// SPDX-License-Identifier: Apache-2.0
// emha::MultiHeadAttention::forward against a plain Eigen MHA, batch 1 self-attention, 1 thread;
// then emha on one thread and split over the port's workers, in wall time.
//
// Names: mha_forward/S:<seq>/D:<d_model>/H:<heads>/<emha|eigen>, and .../wall/threads:<n> (n = 1
// and n = the workers started: --emha_threads=N, default every CPU). Time unit: microseconds;
// times and rates use the thread's CPU time (support/bench_main.hpp says why), except the wall
// benchmarks (real time: a split forward's CPU time is every thread's).
// Counters: GFLOPS (8*S*D^2 + 4*S^2*D FLOP per CPU second, 1e9 FLOP/s), peak_frac
// (GFLOPS over the FMA peak measured at start-up), arena_bytes (emha's arena, bytes).
// At start-up every config's forward() is checked against forward_reference() (the scalar
// kernels) and the Eigen peer; a deviation above 1e-3 stops the binary (exit status 1).
// After the benchmarks, a summary table of medians is printed (stderr under --benchmark_format=json).
// Also in this binary (attention/bench_mha_features.cpp): mha_feature/S:128/D:256/H:8/<feature>,
// the cost of each feature around attention (RoPE, xPos, ALiBi, the norms) against the plain
// layer, checked the same way, with a table of its own after the summaries.

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "attention/eigen_mha.hpp"
#include "attention/mha_cases.hpp"
#include "attention/mha_features.hpp"
#include "attention/mha_summary.hpp"
#include "support/bench_main.hpp"
#include "support/counters.hpp"
#include "support/peers.hpp"

namespace {

using emha_bench::MhaProblem;

struct MhaCase {
  std::string name;  // "mha_forward/S:32/D:64/H:4"
  MhaProblem problem;
  emha_bench::EmhaMha emha;
  emha_bench::EmhaMha threaded;  // max_threads = kMaxThreads
};

// Task slots of the threaded layers: a Raspberry Pi's 4 cores (more workers than slots are idle).
constexpr std::size_t kMaxThreads = 4;

template <std::size_t S, std::size_t D, std::size_t H>
MhaCase make_case(std::uint64_t seed) {
  return {"mha_forward/S:" + std::to_string(S) + "/D:" + std::to_string(D) + "/H:" + std::to_string(H),
          emha_bench::make_mha_problem(S, D, H, seed), emha_bench::EmhaFor<S, D, H>::handle(),
          emha_bench::EmhaFor<S, D, H, kMaxThreads>::handle()};
}

constexpr double kTolerance = 1e-3;  // max |difference| accepted, outputs are O(1)

double max_abs_diff(const emha_bench::Floats& a, const emha_bench::Floats& b) {
  double worst = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(double(a[i]) - double(b[i]));
    if (std::isnan(d)) return INFINITY;  // a NaN output fails the check
    if (d > worst) worst = d;
  }
  return worst;
}

void eigen_forward(const MhaProblem& p, float* y) {
  if constexpr (emha_bench::have_eigen) {
    const emha_bench::TorchMhaWeights w{p.in_proj_weight.data(), p.in_proj_bias.data(),
                                        p.out_proj_weight.data(), p.out_proj_bias.data()};
    emha_bench::eigen_mha_forward(p.seq, p.d_model, p.heads, w, p.x.data(), y);
  }
}

// Sets the weights, runs forward, forward_reference and Eigen once; prints the deviations.
bool check_case(const MhaCase& c, double& dev_reference, std::FILE* text) {
  const MhaProblem& p = c.problem;
  emha_bench::Floats y(p.seq * p.d_model), y_ref(y.size()), y_eigen(y.size());
  if (c.emha.set_weights(p) != emha::Status::ok || c.emha.forward(p, y.data()) != emha::Status::ok ||
      c.emha.forward_reference(p, y_ref.data()) != emha::Status::ok) {
    std::fprintf(stderr, "%s: emha returned an error\n", c.name.c_str());
    return false;
  }
  dev_reference = max_abs_diff(y, y_ref);
  double dev_eigen = 0.0;
  if constexpr (emha_bench::have_eigen) {
    eigen_forward(p, y_eigen.data());
    dev_eigen = max_abs_diff(y, y_eigen);
  }
  std::fprintf(text, "%-26s max|forward - forward_reference| = %.2e, ", c.name.c_str(), dev_reference);
  if (emha_bench::have_eigen) {
    std::fprintf(text, "max|forward - eigen| = %.2e\n", dev_eigen);
  } else {
    std::fprintf(text, "eigen: not built (no Eigen)\n");
  }
  return dev_reference <= kTolerance && dev_eigen <= kTolerance;
}

// The threaded layer gives the single-thread layer's bits (results never depend on threads).
bool check_threaded(const MhaCase& c, std::FILE* text) {
  const MhaProblem& p = c.problem;
  emha_bench::Floats y(p.seq * p.d_model), y_threads(y.size());
  if (c.threaded.set_weights(p) != emha::Status::ok || c.emha.forward(p, y.data()) != emha::Status::ok ||
      c.threaded.forward(p, y_threads.data()) != emha::Status::ok) {
    std::fprintf(stderr, "%s: threaded emha returned an error\n", c.name.c_str());
    return false;
  }
  const bool same = std::memcmp(y.data(), y_threads.data(), y.size() * sizeof(float)) == 0;
  std::fprintf(text, "%-26s threaded forward %s the single-thread bits\n", c.name.c_str(),
               same ? "gives" : "DOES NOT give");
  return same;
}

void bm_emha(benchmark::State& state, const MhaCase* c) {
  emha_bench::Floats y(c->problem.seq * c->problem.d_model);
  for (auto _ : state) {
    if (c->emha.forward(c->problem, y.data()) != emha::Status::ok) {
      state.SkipWithError("forward returned an error");
      break;
    }
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  emha_bench::set_flop_counters(state, c->problem.flop());
  state.counters["arena_bytes"] = double(c->emha.arena_bytes);
}

// forward() of the single-thread layer (threaded == false) or of the kMaxThreads one, wall time.
void bm_wall(benchmark::State& state, const MhaCase* c, bool threaded) {
  const emha_bench::EmhaMha& m = threaded ? c->threaded : c->emha;
  emha_bench::Floats y(c->problem.seq * c->problem.d_model);
  for (auto _ : state) {
    if (m.forward(c->problem, y.data()) != emha::Status::ok) {
      state.SkipWithError("forward returned an error");
      break;
    }
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  emha_bench::set_flop_counters(state, c->problem.flop());
}

void bm_eigen(benchmark::State& state, const MhaCase* c) {
  emha_bench::Floats y(c->problem.seq * c->problem.d_model);
  for (auto _ : state) {
    eigen_forward(c->problem, y.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  emha_bench::set_flop_counters(state, c->problem.flop());
}

}  // namespace

int main(int argc, char** argv) {
  // --emha_threads=N: workers to start (default: every CPU); removed before Google Benchmark
  // sees the arguments.
  std::size_t threads = std::thread::hardware_concurrency();
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--emha_threads=", 15) != 0) continue;
    threads = std::strtoul(argv[i] + 15, nullptr, 10);
    for (int j = i; j + 1 < argc; ++j) argv[j] = argv[j + 1];
    --argc;
    break;
  }
  const std::size_t workers = emha::port::start_workers(threads == 0 ? 1 : threads);
  emha_bench::BenchRun run(argc, argv);
  if (run.status != 0) return run.status;

  // Static storage: the cases outlive the benchmarks that point at them.
  static const std::vector<MhaCase> cases = {
      make_case<32, 64, 4>(10), make_case<64, 128, 4>(20), make_case<128, 256, 8>(30),
      make_case<256, 512, 8>(40)};

  std::vector<emha_bench::MhaSummaryRow> rows;
  bool ok = true;
  for (const MhaCase& c : cases) {
    emha_bench::MhaSummaryRow row{c.name, c.problem.flop(), c.emha.arena_bytes, 0.0};
    ok = check_case(c, row.dev_reference, run.text) && ok;
    ok = check_threaded(c, run.text) && ok;
    rows.push_back(row);
    benchmark::RegisterBenchmark((c.name + "/emha").c_str(), bm_emha, &c)
        ->Unit(benchmark::kMicrosecond);
    if (emha_bench::have_eigen)
      benchmark::RegisterBenchmark((c.name + "/eigen").c_str(), bm_eigen, &c)
          ->Unit(benchmark::kMicrosecond);
  }
  for (const MhaCase& c : cases) {
    benchmark::RegisterBenchmark((c.name + "/wall/threads:1").c_str(), bm_wall, &c, false)
        ->Unit(benchmark::kMicrosecond)->UseRealTime();
    if (workers > 1)
      benchmark::RegisterBenchmark((c.name + "/wall/threads:" + std::to_string(workers)).c_str(),
                                   bm_wall, &c, true)
          ->Unit(benchmark::kMicrosecond)->UseRealTime();
  }
  ok = emha_bench::register_mha_features(run.text) && ok;
  if (!ok) {
    std::fprintf(stderr, "a deviation is above %.0e: not timing wrong results\n", kTolerance);
    return 1;
  }

  run.run();
  emha_bench::print_mha_summary(run.text, rows, run.results, run.peaks());
  emha_bench::print_thread_summary(run.text, rows, run.results, workers);
  emha_bench::print_mha_feature_summary(run.text, run.results);
  return run.status;
}

// emha::MultiHeadAttention::forward against a plain Eigen MHA, batch 1 self-attention, 1 thread.
//
// Names: mha_forward/S:<seq>/D:<d_model>/H:<heads>/<emha|eigen>. Time unit: microseconds; times
// and rates use the thread's CPU time (support/bench_main.hpp says why).
// Counters: GFLOPS (8*S*D^2 + 4*S^2*D FLOP per CPU second, 1e9 FLOP/s), peak_frac
// (GFLOPS over the FMA peak measured at start-up), arena_bytes (emha's arena, bytes).
// At start-up every config's forward() is checked against forward_reference() (the scalar
// kernels) and the Eigen peer; a deviation above 1e-3 stops the binary (exit status 1).
// After the benchmarks, a summary table of medians is printed (stderr under --benchmark_format=json).

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "attention/eigen_mha.hpp"
#include "attention/mha_cases.hpp"
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
};

template <std::size_t S, std::size_t D, std::size_t H>
MhaCase make_case(std::uint64_t seed) {
  return {"mha_forward/S:" + std::to_string(S) + "/D:" + std::to_string(D) + "/H:" + std::to_string(H),
          emha_bench::make_mha_problem(S, D, H, seed), emha_bench::EmhaFor<S, D, H>::handle()};
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
    rows.push_back(row);
    benchmark::RegisterBenchmark((c.name + "/emha").c_str(), bm_emha, &c)
        ->Unit(benchmark::kMicrosecond);
    if (emha_bench::have_eigen)
      benchmark::RegisterBenchmark((c.name + "/eigen").c_str(), bm_eigen, &c)
          ->Unit(benchmark::kMicrosecond);
  }
  if (!ok) {
    std::fprintf(stderr, "a deviation is above %.0e: not timing wrong results\n", kTolerance);
    return 1;
  }

  run.run();
  emha_bench::print_mha_summary(run.text, rows, run.results, run.peaks());
  return run.status;
}

// SPDX-License-Identifier: Apache-2.0
// emha::gemm_f32 against single-threaded OpenBLAS, Eigen, oneDNN and XNNPACK, same shapes, same
// binary.
//
// Names: gemm_f32/<nt|nn>/<M>x<N>x<K>/<emha|emha_pp|openblas|eigen|onednn|xnnpack>
//   nt: C = A * B^T, B stored [N x K] (Trans::transpose: x W^T, the attention projections)
//   nn: C = A * B,   B stored [K x N] (Trans::none)
//   emha packs B on every call; emha_pp is gemm_f32_prepacked with B packed once before timing
//   (gemm_f32_pack_b), which is what MultiHeadAttention does with its weights.
//   onednn and xnnpack create their primitive / operator once per shape before timing
//   (kernels/gemm_peers.hpp): oneDNN's matmul reads b in place, XNNPACK packs it at creation.
// Counters: GFLOPS = 2*M*N*K FLOP per CPU second (1e9 FLOP/s); peak_frac = GFLOPS over the FMA
// peak measured at start-up (support/peak_flops.cpp). Time unit: microseconds; times and rates
// use the thread's CPU time (support/bench_main.hpp says why).
// Before timing, every peer's C is checked against emha's (catches a wrong operand layout).
// After the benchmarks, a summary table of medians is printed (stderr under --benchmark_format=json).

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "emha/arena.hpp"
#include "emha/kernels/gemm.hpp"
#include "kernels/gemm_peers.hpp"
#include "kernels/gemm_shapes.hpp"
#include "kernels/gemm_summary.hpp"
#include "support/bench_main.hpp"
#include "support/counters.hpp"
#include "support/peers.hpp"
#include "support/random.hpp"

namespace {

using emha_bench::GemmShape;
using emha_bench::gemm_shapes;

constexpr std::size_t max_scratch_bytes() {
  std::size_t bytes = 0;
  for (const GemmShape& s : gemm_shapes)
    bytes = emha::gemm_f32_scratch_bytes(s.m, s.n, s.k) > bytes
                ? emha::gemm_f32_scratch_bytes(s.m, s.n, s.k) : bytes;
  return bytes;
}

// gemm_f32's packing scratch: a static arena sized for the largest shape (no heap in the kernel).
emha::StaticArena<max_scratch_bytes()> g_scratch;

// One GEMM implementation: computes c from a and b; false on failure.
using GemmRun = bool (*)(const GemmShape&, emha::Trans, const float* a, const float* b, float* c);

bool run_emha(const GemmShape& s, emha::Trans t, const float* a, const float* b, float* c) {
  const std::size_t ldb = t == emha::Trans::transpose ? s.k : s.n;
  return emha::gemm_f32(s.m, s.n, s.k, a, s.k, b, ldb, t, c, s.n, g_scratch) == emha::Status::ok;
}
// A peer absent from this build is never registered; `if constexpr` keeps its symbol unreferenced.
bool run_openblas(const GemmShape& s, emha::Trans t, const float* a, const float* b, float* c) {
  if constexpr (emha_bench::have_openblas)
    emha_bench::gemm_openblas(s.m, s.n, s.k, a, b, t == emha::Trans::transpose, c);
  return emha_bench::have_openblas;
}
bool run_eigen(const GemmShape& s, emha::Trans t, const float* a, const float* b, float* c) {
  if constexpr (emha_bench::have_eigen)
    emha_bench::gemm_eigen(s.m, s.n, s.k, a, b, t == emha::Trans::transpose, c);
  return emha_bench::have_eigen;
}

// One peer prepared once per shape (PreparedGemm); null if the library failed.
using GemmPrepare = std::unique_ptr<emha_bench::PreparedGemm> (*)(std::size_t m, std::size_t n,
                                                                  std::size_t k, const float* a,
                                                                  const float* b, bool b_transposed,
                                                                  float* c);

std::unique_ptr<emha_bench::PreparedGemm> prepare_onednn(std::size_t m, std::size_t n,
                                                         std::size_t k, const float* a,
                                                         const float* b, bool bt, float* c) {
  if constexpr (emha_bench::have_onednn) return emha_bench::prepare_onednn(m, n, k, a, b, bt, c);
  return nullptr;
}
std::unique_ptr<emha_bench::PreparedGemm> prepare_xnnpack(std::size_t m, std::size_t n,
                                                          std::size_t k, const float* a,
                                                          const float* b, bool bt, float* c) {
  if constexpr (emha_bench::have_xnnpack) return emha_bench::prepare_xnnpack(m, n, k, a, b, bt, c);
  return nullptr;
}

// Max |x - y| / (k * 1.2e-7 * k): below 1 when within 2*k*eps times sum|a||b| <= k (|a|,|b| <= 1).
double scaled_deviation(const emha_bench::Floats& x, const emha_bench::Floats& y, std::size_t k) {
  // A plain loop: GCC 12 for aarch64 crashes vectorizing an fmax reduction here.
  double worst = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double d = std::fabs(double(x[i]) - double(y[i]));
    if (std::isnan(d)) return INFINITY;
    if (d > worst) worst = d;
  }
  return worst / (1.2e-7 * double(k) * double(k) + 1e-6);
}

// What every GEMM benchmark does with its operands a, b and output c: `run` (computes c; true on
// success) once, checked against emha::gemm_f32's result, then timed. Inlined per caller.
template <class Run>
void check_and_time(benchmark::State& state, const GemmShape& s, emha::Trans t,
                    const emha_bench::Floats& a, const emha_bench::Floats& b,
                    const emha_bench::Floats& c, Run run) {
  emha_bench::Floats c_emha(s.m * s.n);
  if (!run_emha(s, t, a.data(), b.data(), c_emha.data()) || !run()) {
    state.SkipWithError("GEMM returned an error");
    return;
  }
  if (scaled_deviation(c, c_emha, s.k) > 1.0) {
    state.SkipWithError("result differs from emha::gemm_f32");
    return;
  }
  for (auto _ : state) {
    run();
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  emha_bench::set_flop_counters(state, 2.0 * double(s.m) * double(s.n) * double(s.k));
}

void bm_gemm(benchmark::State& state, GemmShape s, emha::Trans t, GemmRun run) {
  const emha_bench::Floats a = emha_bench::uniform(s.m * s.k, 1);
  const emha_bench::Floats b = emha_bench::uniform(s.n * s.k, 2);
  emha_bench::Floats c(s.m * s.n);
  check_and_time(state, s, t, a, b, c, [&] { return run(s, t, a.data(), b.data(), c.data()); });
}

// A prepared peer: created here (outside the timed loop), then checked and timed.
void bm_gemm_prepared(benchmark::State& state, GemmShape s, emha::Trans t, GemmPrepare prepare) {
  const emha_bench::Floats a = emha_bench::uniform(s.m * s.k, 1);
  const emha_bench::Floats b = emha_bench::uniform(s.n * s.k, 2);
  emha_bench::Floats c(s.m * s.n);
  const std::unique_ptr<emha_bench::PreparedGemm> gemm =
      prepare(s.m, s.n, s.k, a.data(), b.data(), t == emha::Trans::transpose, c.data());
  if (!gemm) {
    state.SkipWithError("creating the peer's GEMM failed");
    return;
  }
  check_and_time(state, s, t, a, b, c, [&] { return gemm->run(); });
}

// gemm_f32_prepacked: B packed once here (outside the timed loop), then checked and timed.
void bm_gemm_prepacked(benchmark::State& state, GemmShape s, emha::Trans t) {
  const emha_bench::Floats a = emha_bench::uniform(s.m * s.k, 1);
  const emha_bench::Floats b = emha_bench::uniform(s.n * s.k, 2);
  emha_bench::Floats c(s.m * s.n);
  emha_bench::Floats packed(emha::gemm_f32_packed_b_floats(s.n, s.k));
  const std::size_t ldb = t == emha::Trans::transpose ? s.k : s.n;
  if (emha::gemm_f32_pack_b(s.n, s.k, b.data(), ldb, t, packed.data(), packed.size()) != emha::Status::ok) {
    state.SkipWithError("GEMM returned an error");
    return;
  }
  check_and_time(state, s, t, a, b, c, [&] {
    return emha::gemm_f32_prepacked(s.m, s.n, s.k, a.data(), s.k, packed.data(), packed.size(),
                                    c.data(), s.n) == emha::Status::ok;
  });
}

// Registers every shape x layout x present implementation; returns the summary's rows and columns.
void register_gemm_benchmarks(std::vector<emha_bench::GemmSummaryRow>& rows,
                              std::vector<std::string>& impl_names) {
  struct Impl {
    const char* name;
    GemmRun run;
    bool present;
  };
  struct Prepared {
    const char* name;
    GemmPrepare prepare;
    bool present;
  };
  const Impl impls[] = {
      {"emha", run_emha, true},
      {"openblas", run_openblas, emha_bench::have_openblas},
      {"eigen", run_eigen, emha_bench::have_eigen},
  };
  const Prepared prepared[] = {
      {"onednn", prepare_onednn, emha_bench::have_onednn},
      {"xnnpack", prepare_xnnpack, emha_bench::have_xnnpack},
  };
  impl_names.push_back("emha");
  impl_names.push_back("emha_pp");
  for (const Impl& impl : impls)
    if (impl.present && impl.run != run_emha) impl_names.push_back(impl.name);
  for (const Prepared& impl : prepared)
    if (impl.present) impl_names.push_back(impl.name);
  for (const GemmShape& s : gemm_shapes) {
    for (emha::Trans t : {emha::Trans::transpose, emha::Trans::none}) {
      const std::string prefix = std::string("gemm_f32/") + (t == emha::Trans::transpose ? "nt/" : "nn/") +
                                 std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                                 std::to_string(s.k);
      rows.push_back({prefix, 2.0 * double(s.m) * double(s.n) * double(s.k)});
      for (const Impl& impl : impls) {
        if (!impl.present) continue;
        benchmark::RegisterBenchmark((prefix + "/" + impl.name).c_str(), bm_gemm, s, t, impl.run)
            ->Unit(benchmark::kMicrosecond);
      }
      benchmark::RegisterBenchmark((prefix + "/emha_pp").c_str(), bm_gemm_prepacked, s, t)
          ->Unit(benchmark::kMicrosecond);
      for (const Prepared& impl : prepared) {
        if (!impl.present) continue;
        benchmark::RegisterBenchmark((prefix + "/" + impl.name).c_str(), bm_gemm_prepared, s, t,
                                     impl.prepare)
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  emha_bench::BenchRun run(argc, argv);
  if (run.status != 0) return run.status;
  std::vector<emha_bench::GemmSummaryRow> rows;
  std::vector<std::string> impl_names;
  register_gemm_benchmarks(rows, impl_names);
  run.run();
  emha_bench::print_gemm_summary(run.text, rows, impl_names, run.results, run.peaks());
  return run.status;
}

// SPDX-License-Identifier: Apache-2.0
// emha::softmax_f32 against its scalar reference (softmax_f32_ref, the no-SIMD path) and Eigen.
//
// Names: softmax_f32/<rows>x<n>/<emha|emha_ref|eigen>, y = softmax(0.125 * x) row by row, x != y.
// The square shapes are one head's score matrix [S x S] of the MHA benchmark's configs.
// Counters: bytes_per_second = 8 bytes per element (x read, y written) per CPU second;
// items_per_second = elements per second. Time unit: microseconds. Before timing, every result is
// checked against softmax_f32_ref (max |difference| <= 1e-5).

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "emha/kernels/softmax.hpp"
#include "emha/kernels/softmax_ref.hpp"
#include "kernels/softmax_peers.hpp"
#include "support/bench_main.hpp"
#include "support/peers.hpp"
#include "support/random.hpp"

namespace {

constexpr float kScale = 0.125f;  // 1/sqrt(d_k) for d_k = 64

struct SoftmaxShape {
  std::size_t rows, n;
};
constexpr SoftmaxShape kShapes[] = {{32, 32}, {64, 64}, {128, 128}, {256, 256}, {64, 1024}};

using SoftmaxRun = void (*)(std::size_t rows, std::size_t n, const float* x, float* y);

void run_emha(std::size_t rows, std::size_t n, const float* x, float* y) {
  emha::SoftmaxOptions o;
  o.scale = kScale;
  emha::softmax_f32(rows, n, x, n, y, n, o);
}
void run_emha_ref(std::size_t rows, std::size_t n, const float* x, float* y) {
  emha::SoftmaxOptions o;
  o.scale = kScale;
  emha::softmax_f32_ref(rows, n, x, n, y, n, o);
}
// Registered only when Eigen is present; `if constexpr` keeps the symbol unreferenced otherwise.
void run_eigen(std::size_t rows, std::size_t n, const float* x, float* y) {
  if constexpr (emha_bench::have_eigen) emha_bench::softmax_eigen(rows, n, x, kScale, y);
}

void bm_softmax(benchmark::State& state, SoftmaxShape s, SoftmaxRun run) {
  // Scores of a typical magnitude: |scale * x| up to 8.
  const emha_bench::Floats x = emha_bench::uniform(s.rows * s.n, 3, -64.0f, 64.0f);
  emha_bench::Floats y(x.size()), y_ref(x.size());
  run(s.rows, s.n, x.data(), y.data());
  run_emha_ref(s.rows, s.n, x.data(), y_ref.data());
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (!(std::fabs(y[i] - y_ref[i]) <= 1e-5f)) {
      state.SkipWithError("result differs from softmax_f32_ref");
      return;
    }
  }
  for (auto _ : state) {
    run(s.rows, s.n, x.data(), y.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const auto elements = static_cast<std::int64_t>(s.rows * s.n);
  state.SetItemsProcessed(state.iterations() * elements);
  state.SetBytesProcessed(state.iterations() * elements * 2 * std::int64_t(sizeof(float)));
}

void register_softmax_benchmarks() {
  struct Impl {
    const char* name;
    SoftmaxRun run;
    bool present;
  };
  const Impl impls[] = {
      {"emha", run_emha, true},
      {"emha_ref", run_emha_ref, true},
      {"eigen", run_eigen, emha_bench::have_eigen},
  };
  for (const SoftmaxShape& s : kShapes) {
    for (const Impl& impl : impls) {
      if (!impl.present) continue;
      const std::string name = "softmax_f32/" + std::to_string(s.rows) + "x" + std::to_string(s.n) +
                               "/" + impl.name;
      benchmark::RegisterBenchmark(name.c_str(), bm_softmax, s, impl.run)
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  emha_bench::BenchRun run(argc, argv);
  if (run.status != 0) return run.status;
  register_softmax_benchmarks();
  run.run();
  return run.status;
}

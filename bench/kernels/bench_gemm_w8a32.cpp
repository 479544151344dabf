// SPDX-License-Identifier: Apache-2.0
// emha::gemm_w8a32 (int8 weights, float activations) against emha::gemm_f32 on the layer's
// projection shapes x W^T (W [N x K], PyTorch's layout), same binary.
//
// Names: gemm_w8a32/<M>x<N>x<K>/<f32|w8a32|f32_pp|w8a32_pp>
//   f32, w8a32        W read in place every call (gemm_f32 Trans::transpose, gemm_w8a32)
//   f32_pp, w8a32_pp  W packed once before timing (gemm_f32_prepacked, gemm_w8a32_prepacked):
//                     what MultiHeadAttention does with its weights
//   M = 1 is a decode step's projection (a GEMV over W), M = 128, 256 a prompt's.
// Counters: GFLOPS = 2*M*N*K FLOP per CPU second; W_GBps = bytes of W (4 per weight for f32, 1
// for int8) per CPU second. The summary prints medians and w8a32's time over f32's.

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "emha/arena.hpp"
#include "emha/kernels/gemm.hpp"
#include "emha/kernels/gemm_w8a32.hpp"
#include "support/bench_main.hpp"
#include "support/random.hpp"

namespace {

struct Shape {
  std::size_t m, n, k;
};
// d_model 256 and 512: the fused QKV projection (3D x D) and the output projection (D x D).
constexpr std::size_t ms[] = {1, 128, 256};
constexpr Shape projections[] = {{0, 768, 256}, {0, 256, 256}, {0, 1536, 512}, {0, 512, 512}};

emha::StaticArena<emha::gemm_f32_scratch_bytes(256, 1536, 512)> g_scratch;

enum class Impl { f32, w8a32, f32_pp, w8a32_pp };
constexpr const char* impl_names[] = {"f32", "w8a32", "f32_pp", "w8a32_pp"};

void bm(benchmark::State& state, Shape s, Impl impl) {
  const emha_bench::Floats a = emha_bench::uniform(s.m * s.k, 1);
  const emha_bench::Floats wf = emha_bench::uniform(s.n * s.k, 2, -127.0f, 127.0f);
  std::vector<std::int8_t> w(s.n * s.k);
  emha_bench::Floats w_deq(s.n * s.k), scale = emha_bench::uniform(s.n, 3, 0.001f, 0.01f);
  for (std::size_t i = 0; i < w.size(); ++i) {
    w[i] = static_cast<std::int8_t>(std::lround(wf[i]));
    w_deq[i] = float(w[i]) * scale[i / s.k];
  }
  emha_bench::Floats c(s.m * s.n), packed_f(emha::gemm_f32_packed_b_floats(s.n, s.k));
  std::vector<std::int8_t, emha_bench::LineAllocator<std::int8_t>> packed_w(emha::gemm_w8a32_packed_b_bytes(s.n, s.k));
  bool ok = emha::gemm_f32_pack_b(s.n, s.k, w_deq.data(), s.k, emha::Trans::transpose, packed_f.data(),
                                  packed_f.size()) == emha::Status::ok &&
            emha::gemm_w8a32_pack_b(s.n, s.k, w.data(), s.k, scale.data(), packed_w.data(),
                                    packed_w.size()) == emha::Status::ok;
  auto run = [&]() {
    switch (impl) {
      case Impl::f32:
        return emha::gemm_f32(s.m, s.n, s.k, a.data(), s.k, w_deq.data(), s.k, emha::Trans::transpose,
                              c.data(), s.n, g_scratch);
      case Impl::w8a32:
        return emha::gemm_w8a32(s.m, s.n, s.k, a.data(), s.k, w.data(), s.k, scale.data(), c.data(),
                                s.n, g_scratch);
      case Impl::f32_pp:
        return emha::gemm_f32_prepacked(s.m, s.n, s.k, a.data(), s.k, packed_f.data(), packed_f.size(),
                                        c.data(), s.n);
      case Impl::w8a32_pp:
        return emha::gemm_w8a32_prepacked(s.m, s.n, s.k, a.data(), s.k, packed_w.data(), packed_w.size(),
                                          c.data(), s.n);
    }
    return emha::Status::invalid_argument;
  };
  ok = ok && run() == emha::Status::ok;
  if (!ok) {
    state.SkipWithError("emha call failed");
    return;
  }
  for (auto _ : state) {
    run();
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  const bool int8 = impl == Impl::w8a32 || impl == Impl::w8a32_pp;
  state.counters["GFLOPS"] = benchmark::Counter(2.0 * double(s.m * s.n * s.k) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["W_GBps"] = benchmark::Counter(double(s.n * s.k * (int8 ? 1 : 4)) * 1e-9,
                                                benchmark::Counter::kIsIterationInvariantRate);
}

std::string name_of(const Shape& s, Impl impl) {
  return "gemm_w8a32/" + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + "/" +
         impl_names[int(impl)];
}

}  // namespace

int main(int argc, char** argv) {
  emha_bench::BenchRun run(argc, argv);
  if (run.status != 0) return run.status;
  std::vector<Shape> shapes;
  for (std::size_t m : ms)
    for (Shape s : projections) shapes.push_back({m, s.n, s.k});
  for (const Shape& s : shapes)
    for (Impl impl : {Impl::f32, Impl::w8a32, Impl::f32_pp, Impl::w8a32_pp})
      benchmark::RegisterBenchmark(name_of(s, impl).c_str(), bm, s, impl)->Unit(benchmark::kMicrosecond);
  run.run();
  std::fprintf(run.text, "\n%-18s %10s %10s %7s %10s %10s %7s %9s %9s\n", "M x N x K", "f32 us", "w8a32 us",
               "ratio", "f32_pp us", "w8_pp us", "ratio", "w8pp GF/s", "w8pp GB/s");
  for (const Shape& s : shapes) {
    double t[4], gf = 0, gb = 0;
    for (int i = 0; i < 4; ++i) {
      const emha_bench::Measured& r = run.results[name_of(s, Impl(i))];
      t[i] = r.time_s * 1e6;
      if (i == 3 && r.counters.count("GFLOPS")) {
        gf = r.counters.at("GFLOPS");
        gb = r.counters.at("W_GBps");
      }
    }
    const std::string shape = std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
    std::fprintf(run.text, "%-18s %10.2f %10.2f %7.2f %10.2f %10.2f %7.2f %9.1f %9.2f\n", shape.c_str(), t[0], t[1],
                 t[1] / t[0], t[2], t[3], t[3] / t[2], gf, gb);
  }
  return run.status;
}

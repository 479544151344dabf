// SPDX-License-Identifier: Apache-2.0
// The kernels around attention: layer_norm_f32, rms_norm_f32 and rope_f32 against
// their scalar references (the no-SIMD path) in the same run; and what RoPE's angle table costs
// to fill (rope_table_f32), which is what computing angles on the fly would pay on every call.
//
// Names: layer_norm_f32/<rows>x<n>/<emha|emha_ref>, rms_norm_f32/<rows>x<n>/<...>,
//        rope_f32/<rows>x<heads>x<head_dim>/<half|interleaved>/<emha|emha_ref>,
//        rope_table_f32/<positions>x<d_rot>, xpos_f32/<rows>x<heads>x<head_dim>/query+key (one
//        xPos call on the query rows and one on the key rows, as the MHA's xpos stage: scalar, no
//        reference to compare with, one powf per row and pair).
// Rows are the MHA benchmark's configs: S tokens of d_model (norms), S rows of H heads (RoPE on Q
// or K). Memory-bound: bytes_per_second counts x read and y written (norms: 8 bytes per element;
// RoPE: 8 per rotated element plus the table rows, 4 bytes per cos and sin per row). Before timing,
// each result is checked against the reference (norms: |difference| <= 1e-4; RoPE: bit for bit).

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "emha/kernels/norm.hpp"
#include "emha/kernels/norm_ref.hpp"
#include "emha/kernels/rope.hpp"
#include "emha/kernels/rope_ref.hpp"
#include "support/bench_main.hpp"
#include "support/random.hpp"

namespace {

struct NormShape {
  std::size_t rows, n;
};
constexpr NormShape kNormShapes[] = {{32, 64}, {128, 256}, {256, 512}};

struct RopeShape {
  std::size_t rows, heads, head_dim;
};
constexpr RopeShape kRopeShapes[] = {{32, 4, 16}, {128, 8, 32}, {256, 8, 64}};

using NormRun = void (*)(std::size_t rows, std::size_t n, const float* x, float* y, const float* g,
                         const float* b);

void ln_emha(std::size_t rows, std::size_t n, const float* x, float* y, const float* g, const float* b) {
  emha::layer_norm_f32(rows, n, x, n, y, n, g, b, 1e-5f);
}
void ln_ref(std::size_t rows, std::size_t n, const float* x, float* y, const float* g, const float* b) {
  emha::layer_norm_f32_ref(rows, n, x, n, y, n, g, b, 1e-5f);
}
void rms_emha(std::size_t rows, std::size_t n, const float* x, float* y, const float* g, const float*) {
  emha::rms_norm_f32(rows, n, x, n, y, n, g, 1e-6f);
}
void rms_ref(std::size_t rows, std::size_t n, const float* x, float* y, const float* g, const float*) {
  emha::rms_norm_f32_ref(rows, n, x, n, y, n, g, 1e-6f);
}

void bm_norm(benchmark::State& state, NormShape s, NormRun run, NormRun ref) {
  const emha_bench::Floats x = emha_bench::uniform(s.rows * s.n, 3, -3.0f, 5.0f);
  const emha_bench::Floats g = emha_bench::uniform(s.n, 4, 0.5f, 1.5f), b = emha_bench::uniform(s.n, 5);
  emha_bench::Floats y(x.size()), y_ref(x.size());
  run(s.rows, s.n, x.data(), y.data(), g.data(), b.data());
  ref(s.rows, s.n, x.data(), y_ref.data(), g.data(), b.data());
  for (std::size_t i = 0; i < y.size(); ++i)
    if (!(std::fabs(y[i] - y_ref[i]) <= 1e-4f)) return state.SkipWithError("result differs from the reference");
  for (auto _ : state) {
    run(s.rows, s.n, x.data(), y.data(), g.data(), b.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const auto elements = static_cast<std::int64_t>(s.rows * s.n);
  state.SetItemsProcessed(state.iterations() * elements);
  state.SetBytesProcessed(state.iterations() * elements * 2 * std::int64_t(sizeof(float)));
}

using RopeRun = emha::Status (*)(std::size_t, std::size_t, std::size_t, emha::RopePairing, std::size_t,
                                 const emha::RopeTable&, float*, std::size_t);

void bm_rope(benchmark::State& state, RopeShape s, emha::RopePairing pairing, RopeRun run) {
  const std::size_t ld = s.heads * s.head_dim;
  emha_bench::Floats cos(emha::rope_table_floats(s.rows, s.head_dim)), sin(cos.size());
  if (emha::rope_table_f32(s.rows, s.head_dim, 10000.0f, cos.data(), sin.data()) != emha::Status::ok)
    return state.SkipWithError("rope_table_f32 failed");
  const emha::RopeTable t{cos.data(), sin.data(), s.rows, s.head_dim};
  const emha_bench::Floats x = emha_bench::uniform(s.rows * ld, 3);
  emha_bench::Floats y(x.size()), y_ref(x.size());
  std::memcpy(y.data(), x.data(), x.size() * sizeof(float));
  std::memcpy(y_ref.data(), x.data(), x.size() * sizeof(float));
  run(s.rows, s.heads, s.head_dim, pairing, 0, t, y.data(), ld);
  emha::rope_f32_ref(s.rows, s.heads, s.head_dim, pairing, 0, t, y_ref.data(), ld);
  if (std::memcmp(y.data(), y_ref.data(), y.size() * sizeof(float)) != 0)
    return state.SkipWithError("result differs from rope_f32_ref");
  for (auto _ : state) {  // rotates y again and again: the angles' values do not change the time
    run(s.rows, s.heads, s.head_dim, pairing, 0, t, y.data(), ld);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const auto elements = static_cast<std::int64_t>(s.rows * ld);
  state.SetItemsProcessed(state.iterations() * elements);
  state.SetBytesProcessed(state.iterations() *
                          (elements * 2 + std::int64_t(s.rows * s.head_dim)) * std::int64_t(sizeof(float)));
}

void bm_rope_table(benchmark::State& state, std::size_t positions, std::size_t d_rot) {
  emha_bench::Floats cos(emha::rope_table_floats(positions, d_rot)), sin(cos.size());
  for (auto _ : state) {
    benchmark::DoNotOptimize(emha::rope_table_f32(positions, d_rot, 10000.0f, cos.data(), sin.data()));
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * std::int64_t(cos.size()));
}

// xpos_f32 on the query rows, then on the same rows as keys (downscale): what the MHA's xpos stage
// runs per sequence (rows = n_total = S). The two scalings cancel, so the values stay O(1) however
// many iterations run (one direction alone would reach denormals or infinities). Time is per pair.
void bm_xpos(benchmark::State& state, RopeShape s) {
  const std::size_t ld = s.heads * s.head_dim;
  emha_bench::Floats cos(emha::rope_table_floats(s.rows, s.head_dim)), sin(cos.size());
  if (emha::rope_table_f32(s.rows, s.head_dim, 10000.0f, cos.data(), sin.data()) != emha::Status::ok)
    return state.SkipWithError("rope_table_f32 failed");
  const emha::RopeTable t{cos.data(), sin.data(), s.rows, s.head_dim};
  emha_bench::Floats y = emha_bench::uniform(s.rows * ld, 3);
  for (auto _ : state) {
    const emha::Status q = emha::xpos_f32(s.rows, s.heads, s.head_dim, s.rows, false, 512.0f, t, y.data(), ld);
    const emha::Status k = emha::xpos_f32(s.rows, s.heads, s.head_dim, s.rows, true, 512.0f, t, y.data(), ld);
    if (q != emha::Status::ok || k != emha::Status::ok) return state.SkipWithError("xpos_f32 failed");
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const auto elements = static_cast<std::int64_t>(2 * s.rows * ld);
  state.SetItemsProcessed(state.iterations() * elements);
  state.SetBytesProcessed(state.iterations() *
                          (elements * 2 + std::int64_t(2 * s.rows * s.head_dim)) * std::int64_t(sizeof(float)));
}

void register_benchmarks() {
  for (const NormShape& s : kNormShapes) {
    const std::string shape = std::to_string(s.rows) + "x" + std::to_string(s.n);
    benchmark::RegisterBenchmark(("layer_norm_f32/" + shape + "/emha").c_str(), bm_norm, s, ln_emha, ln_ref);
    benchmark::RegisterBenchmark(("layer_norm_f32/" + shape + "/emha_ref").c_str(), bm_norm, s, ln_ref, ln_ref);
    benchmark::RegisterBenchmark(("rms_norm_f32/" + shape + "/emha").c_str(), bm_norm, s, rms_emha, rms_ref);
    benchmark::RegisterBenchmark(("rms_norm_f32/" + shape + "/emha_ref").c_str(), bm_norm, s, rms_ref, rms_ref);
  }
  for (const RopeShape& s : kRopeShapes) {
    const std::string shape =
        std::to_string(s.rows) + "x" + std::to_string(s.heads) + "x" + std::to_string(s.head_dim);
    for (emha::RopePairing p : {emha::RopePairing::half, emha::RopePairing::interleaved}) {
      const std::string base = "rope_f32/" + shape + (p == emha::RopePairing::half ? "/half" : "/interleaved");
      benchmark::RegisterBenchmark((base + "/emha").c_str(), bm_rope, s, p, &emha::rope_f32);
      benchmark::RegisterBenchmark((base + "/emha_ref").c_str(), bm_rope, s, p, &emha::rope_f32_ref);
    }
    benchmark::RegisterBenchmark(("xpos_f32/" + shape + "/query+key").c_str(), bm_xpos, s);
    benchmark::RegisterBenchmark(
        ("rope_table_f32/" + std::to_string(s.rows) + "x" + std::to_string(s.head_dim)).c_str(), bm_rope_table,
        s.rows, s.head_dim);
  }
}

}  // namespace

int main(int argc, char** argv) {
  emha_bench::BenchRun run(argc, argv);
  if (run.status != 0) return run.status;
  register_benchmarks();
  run.run();
  return run.status;
}

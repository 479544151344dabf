// SPDX-License-Identifier: Apache-2.0
// The full-integer int8 layer (Arithmetic::s8) and the 16x8 one (Arithmetic::s16x8) against the
// float layer of the same shape, in one run: MultiHeadAttention<Config>::forward, batch 1
// self-attention, no mask, one thread, at (S, D, H) = (128, 256, 8) and (256, 512, 8). The float
// layer reads bench_mha's seed-30 problem; the integer ones seeded int8 weights and inputs with
// plausible multipliers (their instruction streams do not depend on the values).
//
// Names: mha_s8/S:<S>/D:<D>/H:<H>/{float,int8,16x8}. Time unit: microseconds of the thread's CPU time.
// Counters: GFLOPS (8*S*D^2 + 4*S^2*D operations per CPU second, int8 multiply-adds counted as
// FLOP), peak_frac (of the float FMA peak), int8_peak_frac (the int8 layer's, of the int8
// multiply-add peak where the bench has one: VPDPBUSD), arena_bytes. The speed-up is float time /
// int8 time.

#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "attention/mha_cases.hpp"
#include "support/counters.hpp"

namespace emha_bench {
namespace {

template <std::size_t S, std::size_t D, std::size_t H>
struct FloatConfig : emha::MhaConfig<D, H, S> {};

template <std::size_t S, std::size_t D, std::size_t H>
struct S8Config : emha::MhaConfig<D, H, S> {
  static constexpr emha::Arithmetic arithmetic = emha::Arithmetic::s8;
};

// Seeded int8 weights, biases and multipliers of the four projections, and an input.
struct S8Problem {
  std::vector<std::int8_t> weight[4], x, y;
  std::vector<std::int32_t> bias[4];
  std::vector<emha::QuantizedMultiplier> multiplier[4];
  emha::MhaS8Weights w;

  S8Problem(std::size_t s, std::size_t d) : x(s * d), y(s * d) {
    std::uint64_t seed = 7;
    const auto next = [&seed] {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      return std::uint32_t(seed >> 33);
    };
    for (int i = 0; i < 4; ++i) {
      weight[i].resize(d * d);
      for (auto& v : weight[i]) v = std::int8_t(int(next() % 255) - 127);
      bias[i].resize(d);
      multiplier[i].resize(d);
      for (std::size_t j = 0; j < d; ++j) {
        bias[i][j] = std::int32_t(next() % 4096) - 2048;
        multiplier[i][j] = {std::int32_t((1u << 30) + next() % (1u << 24)), -9};
      }
    }
    for (auto& v : x) v = std::int8_t(int(next() % 256) - 128);
    emha::ProjectionS8* p[4] = {&w.q, &w.k, &w.v, &w.out};
    for (int i = 0; i < 4; ++i) *p[i] = {{weight[i].data(), d * d}, {bias[i].data(), d}, {multiplier[i].data(), d}};
    w.zero_point_query = w.zero_point_key = w.zero_point_value = -3;
    w.zero_point_q = 5, w.zero_point_k = -7, w.zero_point_v = 2, w.zero_point_scores = 10;
    w.zero_point_context = -1;
    w.scores = {1 << 30, -8};
    w.softmax = {1 << 30, 21, -3968};
    w.context = {1 << 30, -9};
  }
};

template <std::size_t S, std::size_t D, std::size_t H>
struct S16x8Config : emha::MhaConfig<D, H, S> {
  static constexpr emha::Arithmetic arithmetic = emha::Arithmetic::s16x8;
};

// The 16x8 layer's: the same int8 weights, int64 biases, int16 input.
struct S16x8Problem {
  S8Problem s8;
  std::vector<std::int16_t> x, y;
  std::vector<std::int64_t> bias[4];
  emha::MhaS16x8Weights w;

  S16x8Problem(std::size_t s, std::size_t d) : s8(s, d), x(s * d), y(s * d) {
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::int16_t(s8.x[i] * 251);
    emha::ProjectionS16x8* p[4] = {&w.q, &w.k, &w.v, &w.out};
    for (int i = 0; i < 4; ++i) {
      bias[i].assign(s8.bias[i].begin(), s8.bias[i].end());
      *p[i] = {{s8.weight[i].data(), d * d}, {bias[i].data(), d}, {s8.multiplier[i].data(), d}};
    }
    w.scores = {1 << 30, -16};
    w.softmax.input = {1 << 30, 2};
    w.context = {1 << 30, -9};
  }
};

template <std::size_t S, std::size_t D, std::size_t H>
void bm_float(benchmark::State& state) {
  static const MhaProblem problem = make_mha_problem(S, D, H, 30);
  static emha::MultiHeadAttention<FloatConfig<S, D, H>> layer;
  emha::MhaWeights w;
  w.in_proj_weight = {problem.in_proj_weight.data(), problem.in_proj_weight.size()};
  w.in_proj_bias = {problem.in_proj_bias.data(), problem.in_proj_bias.size()};
  w.out_proj_weight = {problem.out_proj_weight.data(), problem.out_proj_weight.size()};
  w.out_proj_bias = {problem.out_proj_bias.data(), problem.out_proj_bias.size()};
  Floats y(S * D);
  const emha::Span<const float> x{problem.x.data(), problem.x.size()};
  if (layer.set_weights(w) != emha::Status::ok) return state.SkipWithError("set_weights");
  for (auto _ : state) {
    if (layer.forward({S, S, 1}, x, x, x, {y.data(), y.size()}) != emha::Status::ok) return state.SkipWithError("forward");
    benchmark::DoNotOptimize(y.data());
  }
  set_flop_counters(state, problem.flop());
  state.counters["arena_bytes"] = double(layer.arena_bytes);
}

template <std::size_t S, std::size_t D, std::size_t H>
void bm_int8(benchmark::State& state) {
  static S8Problem problem(S, D);
  static emha::MultiHeadAttention<S8Config<S, D, H>> layer;
  const emha::Span<const std::int8_t> x{problem.x.data(), problem.x.size()};
  if (layer.set_weights(problem.w) != emha::Status::ok) return state.SkipWithError("set_weights");
  for (auto _ : state) {
    if (layer.forward({S, S, 1}, x, x, x, {problem.y.data(), problem.y.size()}) != emha::Status::ok)
      return state.SkipWithError("forward");
    benchmark::DoNotOptimize(problem.y.data());
  }
  set_int8_counters(state, 8.0 * S * D * D + 4.0 * S * S * D);
  state.counters["arena_bytes"] = double(layer.arena_bytes);
}

template <std::size_t S, std::size_t D, std::size_t H>
void bm_16x8(benchmark::State& state) {
  static S16x8Problem problem(S, D);
  static emha::MultiHeadAttention<S16x8Config<S, D, H>> layer;
  const emha::Span<const std::int16_t> x{problem.x.data(), problem.x.size()};
  if (layer.set_weights(problem.w) != emha::Status::ok) return state.SkipWithError("set_weights");
  for (auto _ : state) {
    if (layer.forward({S, S, 1}, x, x, x, {problem.y.data(), problem.y.size()}) != emha::Status::ok)
      return state.SkipWithError("forward");
    benchmark::DoNotOptimize(problem.y.data());
  }
  set_flop_counters(state, 8.0 * S * D * D + 4.0 * S * S * D);
  state.counters["arena_bytes"] = double(layer.arena_bytes);
}

BENCHMARK(bm_float<128, 256, 8>)->Name("mha_s8/S:128/D:256/H:8/float")->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_int8<128, 256, 8>)->Name("mha_s8/S:128/D:256/H:8/int8")->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_16x8<128, 256, 8>)->Name("mha_s8/S:128/D:256/H:8/16x8")->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_float<256, 512, 8>)->Name("mha_s8/S:256/D:512/H:8/float")->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_int8<256, 512, 8>)->Name("mha_s8/S:256/D:512/H:8/int8")->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_16x8<256, 512, 8>)->Name("mha_s8/S:256/D:512/H:8/16x8")->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace emha_bench

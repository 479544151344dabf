// SPDX-License-Identifier: Apache-2.0
// The features around attention, one at a time against the plain layer: emha
// MultiHeadAttention<Config>::forward at (S, D, H) = (128, 256, 8), batch 1 self-attention
// (query, key and value the same span), no mask, fused path (no attention weights asked), one
// thread; the Configs differ from MhaConfig<256, 8, 128> only in the member named:
//   plain            none of them (the layer of mha_forward/S:128/D:256/H:8/emha, own object)
//   rope             position = rope: HF rotate_half pairing over all d_k dims, base 10000
//   xpos             position = xpos: torchscale's xPos, scale_base 512
//   alibi            position = alibi: per-head slopes, -slope * |i - j| on the scores
//   post_layer_norm  norm = post, LayerNorm (eps 1e-5, weight and bias): out = LN(x + MHA(x))
//   pre_rms_norm     norm = pre, RMSNorm (eps 1e-6, weight): out = x + MHA(RMSNorm(x))
//   sub_layer_norm   norm = sub, LayerNorm: out = out_proj(LN(heads(x)))  (torchscale's sub-LN)
// Every layer reads the same input and projection weights (bench_mha's seed-30 problem at this
// size); norm weights are uniform in [0.5, 1.5), norm biases in [-0.1, 0.1).
//
// Names: mha_feature/S:128/D:256/H:8/<feature>. Time unit: microseconds of the thread's CPU time.
// Counters as bench_mha's: GFLOPS (8*S*D^2 + 4*S^2*D FLOP per CPU second: the features' own work
// is not counted, so a feature's cost shows as fewer GFLOP/s), peak_frac, arena_bytes.

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "attention/mha_cases.hpp"
#include "attention/mha_features.hpp"
#include "support/counters.hpp"

namespace emha_bench {
namespace {

constexpr std::size_t kS = 128, kD = 256, kH = 8;
constexpr double kTolerance = 1e-3;  // as bench_mha's: max |forward - forward_reference|

// The plain layer's weights and input, and the norms' weights (used by the configs with a norm).
struct FeatureInputs {
  MhaProblem problem;
  Floats norm_weight, norm_bias;
};

template <emha::Position P, emha::NormPlacement N = emha::NormPlacement::none,
          emha::NormKind K = emha::NormKind::layer_norm>
struct FeatureConfig : emha::MhaConfig<kD, kH, kS> {
  static constexpr emha::Position position = P;
  static constexpr emha::NormPlacement norm = N;
  static constexpr emha::NormKind norm_kind = K;
  static constexpr float norm_eps = K == emha::NormKind::rms_norm ? 1e-6f : 1e-5f;
};

// One compiled feature config behind function pointers (as mha_cases.hpp's EmhaMha).
struct FeatureLayer {
  std::size_t arena_bytes = 0;
  emha::Status (*set_weights)(const FeatureInputs&) = nullptr;
  emha::Status (*forward)(const FeatureInputs&, float* y) = nullptr;
  emha::Status (*forward_reference)(const FeatureInputs&, float* y) = nullptr;
};

template <class Config>
struct FeatureFor {
  using Mha = emha::MultiHeadAttention<Config>;

  static Mha& instance() {  // static storage: the object holds its arena and packed weights
    static Mha mha;
    return mha;
  }
  static emha::Status set_weights(const FeatureInputs& in) {
    const MhaProblem& p = in.problem;
    emha::MhaWeights w;
    w.in_proj_weight = {p.in_proj_weight.data(), p.in_proj_weight.size()};
    w.in_proj_bias = {p.in_proj_bias.data(), p.in_proj_bias.size()};
    w.out_proj_weight = {p.out_proj_weight.data(), p.out_proj_weight.size()};
    w.out_proj_bias = {p.out_proj_bias.data(), p.out_proj_bias.size()};
    if (Config::norm != emha::NormPlacement::none && Config::norm_affine) {
      w.norm_weight = {in.norm_weight.data(), in.norm_weight.size()};
      if (Config::norm_kind == emha::NormKind::layer_norm)
        w.norm_bias = {in.norm_bias.data(), in.norm_bias.size()};
    }
    return instance().set_weights(w);
  }
  static emha::Status forward(const FeatureInputs& in, float* y) {
    const emha::Span<const float> x{in.problem.x.data(), in.problem.x.size()};
    return instance().forward({kS, kS, 1}, x, x, x, {y, kS * kD});
  }
  static emha::Status forward_reference(const FeatureInputs& in, float* y) {
    const emha::Span<const float> x{in.problem.x.data(), in.problem.x.size()};
    return instance().forward_reference({kS, kS, 1}, x, x, x, {y, kS * kD});
  }
  static FeatureLayer handle() {
    return {Mha::arena_bytes, &FeatureFor::set_weights, &FeatureFor::forward,
            &FeatureFor::forward_reference};
  }
};

struct FeatureCase {
  const char* feature;  // last name component
  const char* what;     // the table's description
  FeatureLayer layer;
  double dev_reference = 0.0;  // max |forward - forward_reference|
};

using emha::NormKind;
using emha::NormPlacement;
using emha::Position;

std::vector<FeatureCase>& cases() {  // static: the benchmarks point at them
  static std::vector<FeatureCase> c = {
      {"plain", "plain (MhaConfig defaults)", FeatureFor<FeatureConfig<Position::none>>::handle()},
      {"rope", "RoPE, half pairing, all d_k", FeatureFor<FeatureConfig<Position::rope>>::handle()},
      {"xpos", "xPos (torchscale)", FeatureFor<FeatureConfig<Position::xpos>>::handle()},
      {"alibi", "ALiBi", FeatureFor<FeatureConfig<Position::alibi>>::handle()},
      {"post_layer_norm", "post-LN, LayerNorm",
       FeatureFor<FeatureConfig<Position::none, NormPlacement::post>>::handle()},
      {"pre_rms_norm", "pre-LN, RMSNorm",
       FeatureFor<FeatureConfig<Position::none, NormPlacement::pre, NormKind::rms_norm>>::handle()},
      {"sub_layer_norm", "sub-LN, LayerNorm",
       FeatureFor<FeatureConfig<Position::none, NormPlacement::sub>>::handle()},
  };
  return c;
}

const FeatureInputs& inputs() {
  static const FeatureInputs in{make_mha_problem(kS, kD, kH, 30), uniform(kD, 31, 0.5f, 1.5f),
                                uniform(kD, 32, -0.1f, 0.1f)};
  return in;
}

std::string prefix() {
  return "mha_feature/S:" + std::to_string(kS) + "/D:" + std::to_string(kD) + "/H:" + std::to_string(kH);
}

double max_abs_diff(const Floats& a, const Floats& b) {
  double worst = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(double(a[i]) - double(b[i]));
    if (std::isnan(d)) return INFINITY;
    if (d > worst) worst = d;
  }
  return worst;
}

void bm_feature(benchmark::State& state, const FeatureCase* c) {
  const FeatureInputs& in = inputs();
  Floats y(kS * kD);
  for (auto _ : state) {
    if (c->layer.forward(in, y.data()) != emha::Status::ok) {
      state.SkipWithError("forward returned an error");
      break;
    }
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_flop_counters(state, in.problem.flop());
  state.counters["arena_bytes"] = double(c->layer.arena_bytes);
}

}  // namespace

bool register_mha_features(std::FILE* text) {
  const FeatureInputs& in = inputs();
  bool ok = true;
  Floats y_plain(kS * kD);
  for (FeatureCase& c : cases()) {
    const std::string name = prefix() + "/" + c.feature;
    Floats y(kS * kD), y_ref(y.size());
    if (c.layer.set_weights(in) != emha::Status::ok || c.layer.forward(in, y.data()) != emha::Status::ok ||
        c.layer.forward_reference(in, y_ref.data()) != emha::Status::ok) {
      std::fprintf(stderr, "%s: emha returned an error\n", name.c_str());
      ok = false;
      continue;
    }
    c.dev_reference = max_abs_diff(y, y_ref);
    const bool plain = &c == &cases().front();
    if (plain) y_plain = y;
    const double from_plain = max_abs_diff(y, y_plain);
    std::fprintf(text, "%-42s max|forward - forward_reference| = %.2e, max|forward - plain| = %.2e\n",
                 name.c_str(), c.dev_reference, from_plain);
    ok = ok && c.dev_reference <= kTolerance && (plain || from_plain > 0.0);
    benchmark::RegisterBenchmark(name.c_str(), bm_feature, &c)->Unit(benchmark::kMicrosecond);
  }
  return ok;
}

void print_mha_feature_summary(std::FILE* out, const std::map<std::string, Measured>& results) {
  const auto plain = results.find(prefix() + "/" + cases().front().feature);
  if (plain == results.end() || plain->second.time_s <= 0.0) return;
  const double flop = inputs().problem.flop();
  std::fprintf(out,
               "\nfeatures around attention: MultiHeadAttention::forward at S=%zu D=%zu "
               "H=%zu, batch 1 self-attention,\nfused path, 1 thread, one Config member changed; "
               "us = median CPU microseconds per forward; GFLOP/s of the\nplain layer's FLOP count; "
               "vs plain = this median / plain's median, same run\n\n%-30s %10s %8s %9s %13s\n",
               kS, kD, kH, "feature", "emha us", "GFLOP/s", "vs plain", "max|fwd-ref|");
  for (const FeatureCase& c : cases()) {
    const auto r = results.find(prefix() + "/" + c.feature);
    if (r == results.end() || r->second.time_s <= 0.0) continue;
    const double t = r->second.time_s;
    std::fprintf(out, "%-30s %10.1f %8.1f %8.3fx %13.2e\n", c.what, t * 1e6, flop / t * 1e-9,
                 t / plain->second.time_s, c.dev_reference);
  }
  std::fflush(out);
}

}  // namespace emha_bench

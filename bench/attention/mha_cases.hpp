// SPDX-License-Identifier: Apache-2.0
#pragma once
// The MHA benchmark's cases: random weights and input for one (S, D, H), and a type-erased
// handle on a static emha::MultiHeadAttention<MhaConfig<D, H, S>> so that a table of cases can
// hold configs of different compile-time sizes.

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "emha/emha.hpp"
#include "support/random.hpp"

namespace emha_bench {

// Batch 1 self-attention over `seq` tokens; weights initialised like PyTorch's (Xavier-uniform
// in_proj, uniform(+-1/sqrt(D)) out_proj), biases and x random too.
struct MhaProblem {
  std::size_t seq = 0, d_model = 0, heads = 0;
  Floats in_proj_weight, in_proj_bias, out_proj_weight, out_proj_bias;
  Floats x;  // [seq, d_model]

  // FLOP of one forward: projections 2*S*D*3D + 2*S*D*D, scores and P*V 2 * 2*S*S*D
  // (= 8*S*D^2 + 4*S^2*D; softmax and biases not counted).
  double flop() const {
    const double s = double(seq), d = double(d_model);
    return 8.0 * s * d * d + 4.0 * s * s * d;
  }
};

inline MhaProblem make_mha_problem(std::size_t seq, std::size_t d_model, std::size_t heads,
                                   std::uint64_t seed) {
  MhaProblem p;
  p.seq = seq;
  p.d_model = d_model;
  p.heads = heads;
  const float d = float(d_model);
  const float xavier = std::sqrt(6.0f / (d + 3.0f * d));
  p.in_proj_weight = uniform(3 * d_model * d_model, seed, -xavier, xavier);
  p.in_proj_bias = uniform(3 * d_model, seed + 1, -0.1f, 0.1f);
  p.out_proj_weight = uniform(d_model * d_model, seed + 2, -1.0f / std::sqrt(d), 1.0f / std::sqrt(d));
  p.out_proj_bias = uniform(d_model, seed + 3, -0.1f, 0.1f);
  p.x = uniform(seq * d_model, seed + 4);
  return p;
}

// One compiled config, reached through plain function pointers.
struct EmhaMha {
  std::size_t arena_bytes = 0;  // MultiHeadAttention<Config>::arena_bytes (its owned arena)
  emha::Status (*set_weights)(const MhaProblem&) = nullptr;  // weights must outlive the object
  emha::Status (*forward)(const MhaProblem&, float* y) = nullptr;            // SIMD kernels
  emha::Status (*forward_reference)(const MhaProblem&, float* y) = nullptr;  // scalar oracle
};

// The config of a case: max_threads task slots (1: the single-thread layer users get by default).
template <std::size_t S, std::size_t D, std::size_t H, std::size_t Threads>
struct BenchConfig : emha::MhaConfig<D, H, S> {
  static constexpr std::size_t max_threads = Threads;
};

template <std::size_t S, std::size_t D, std::size_t H, std::size_t Threads = 1>
struct EmhaFor {
  using Mha = emha::MultiHeadAttention<BenchConfig<S, D, H, Threads>>;

  // Static storage: the object holds its arena (arena_bytes, megabytes for the large configs).
  static Mha& instance() {
    static Mha mha;
    return mha;
  }
  static emha::Status set_weights(const MhaProblem& p) {
    emha::MhaWeights w;
    w.in_proj_weight = {p.in_proj_weight.data(), p.in_proj_weight.size()};
    w.in_proj_bias = {p.in_proj_bias.data(), p.in_proj_bias.size()};
    w.out_proj_weight = {p.out_proj_weight.data(), p.out_proj_weight.size()};
    w.out_proj_bias = {p.out_proj_bias.data(), p.out_proj_bias.size()};
    return instance().set_weights(w);
  }
  static emha::Status forward(const MhaProblem& p, float* y) {
    const emha::Span<const float> x{p.x.data(), p.x.size()};
    return instance().forward({S, S, 1}, x, x, x, {y, S * D});
  }
  static emha::Status forward_reference(const MhaProblem& p, float* y) {
    const emha::Span<const float> x{p.x.data(), p.x.size()};
    return instance().forward_reference({S, S, 1}, x, x, x, {y, S * D});
  }
  static EmhaMha handle() {
    return {Mha::arena_bytes, &EmhaFor::set_weights, &EmhaFor::forward, &EmhaFor::forward_reference};
  }
};

}  // namespace emha_bench

// SPDX-License-Identifier: Apache-2.0
// The model-family features (head_dim, QK-norm, Config::scale, T5's relative bias; fixtures of
// tests/attention/gen_feature_fixtures.py) on the host, beside test_layer_features.cpp's parity:
// a forward split over worker threads (Config::max_threads 2 and 3) gives the bits of one thread
// on the fused and unfused paths and while decoding through a KvCache, with float and with int8
// weights (tests/attention/gen_w8_fixtures.py); a run-time
// ForwardOptions::scale equal to Config::scale gives its bits; and the weights these features
// add are refused when missing, mis-sized or given to a Config that does not use them
// (set_weights' span rule: absent {nullptr, 0} where required or {nullptr, n} is null_pointer,
// a wrong size size_mismatch, an unused span given invalid_argument), the weights set before
// staying in use.

#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "attention/feature_support.hpp"
#include "feature_fixtures/all.hpp"

namespace {

using emha::Status;
using emha::test::FeatureConfig;
namespace ff = emha::feature_fixtures;

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

struct Result {
  std::vector<float> out, attn, decoded;
};

// A forward of the fixture's layer with `Threads` slots: fused (out), unfused (out is the same
// call's; attn the per-head weights) and, for causal fixtures, decoding all T tokens (a 3-token
// prefill, then single steps).
template <class F, std::size_t Threads, class C = FeatureConfig<F, true, Threads>>
Result run(bool unfused) {
  auto mha = std::make_unique<emha::MultiHeadAttention<C>>();
  REQUIRE(mha->set_weights(emha::test::feature_weights<F>()) == Status::ok);
  constexpr std::size_t B = F::batch, T = F::seq_q, D = F::d_model;
  Result r{std::vector<float>(B * T * D, -1.0f), {}, {}};
  emha::ForwardOptions o = emha::test::feature_options<F>();
  if (unfused) {
    r.attn.assign(B * F::heads * T * T, -1.0f);
    o.attn_weights = {r.attn.data(), r.attn.size()};
  }
  const auto q = emha::test::span_of(F::query);
  REQUIRE(mha->forward(emha::test::fixture_shape<F>(), q, q, q, {r.out.data(), r.out.size()}, o) == Status::ok);
  if constexpr (F::causal) {
    if (!unfused) {
      auto cache = std::make_unique<emha::KvCache<C>>();
      r.decoded.assign(B * T * D, -1.0f);
      for (std::size_t t = 0; t < T;) {
        const std::size_t n = t == 0 ? 3 : 1;
        std::vector<float> x(B * n * D), y(B * n * D);
        for (std::size_t b = 0; b < B; ++b) std::memcpy(&x[b * n * D], &F::query[(b * T + t) * D], n * D * sizeof(float));
        const emha::AttentionShape shape{n, cache->keys(n, B), B, emha::Layout::batch_first};
        REQUIRE(mha->forward(shape, {x.data(), x.size()}, {y.data(), y.size()}, *cache, emha::test::feature_options<F>()) ==
                Status::ok);
        for (std::size_t b = 0; b < B; ++b) std::memcpy(&r.decoded[(b * T + t) * D], &y[b * n * D], n * D * sizeof(float));
        t += n;
      }
    }
  }
  CHECK(mha->arena().high_water() <= emha::MultiHeadAttention<C>::arena_bytes);
  return r;
}

template <class F>
void threads_match_one() {
  INFO(std::string(F::name));
  for (const bool unfused : {false, true}) {
    CAPTURE(unfused);
    const Result one = run<F, 1>(unfused), two = run<F, 2>(unfused), three = run<F, 3>(unfused);
    CHECK(same_bits(one.out, two.out));
    CHECK(same_bits(one.out, three.out));
    CHECK(same_bits(one.attn, two.attn));
    CHECK(same_bits(one.attn, three.attn));
    CHECK(same_bits(one.decoded, two.decoded));
    CHECK(same_bits(one.decoded, three.decoded));
    // Not a copy of a wrong result: within the budget of torch's.
    CHECK(emha::test::max_scaled_error(two.out.data(), F::out, two.out.size()) <= emha::test::feature_tolerance<F>());
  }
}

template <class... F>
void all_threads(std::tuple<F...>*) {
  (threads_match_one<F>(), ...);
}

// Config::scale left at 0 (1/sqrt(head_dim)), the fixture's scale given at run time.
template <class F>
struct RunTimeScale : FeatureConfig<F> {
  static constexpr float scale = 0.0f;
};

template <class F>
std::vector<float> forward_with(float scale) {
  auto mha = std::make_unique<emha::MultiHeadAttention<RunTimeScale<F>>>();
  REQUIRE(mha->set_weights(emha::test::feature_weights<F>()) == Status::ok);
  std::vector<float> out(F::batch * F::seq_q * F::d_model);
  emha::ForwardOptions o = emha::test::feature_options<F>();
  o.scale = scale;
  const auto q = emha::test::span_of(F::query);
  REQUIRE(mha->forward(emha::test::fixture_shape<F>(), q, q, q, {out.data(), out.size()}, o) == Status::ok);
  return out;
}

}  // namespace

TEST_CASE("the model-family features split over threads give the bits of one thread") {
  REQUIRE(emha::port::start_workers(2) == 2);
  all_threads(static_cast<ff::all*>(nullptr));
}

TEST_CASE("int8 weights (W8A32) split over threads give the bits of one thread") {
  REQUIRE(emha::port::start_workers(2) == 2);
  all_threads(static_cast<emha::w8_fixtures::all*>(nullptr));
}

TEST_CASE("a run-time scale equal to Config::scale gives its bits; the default is 1/sqrt(head_dim)") {
  // T5 (scale 1) and Gemma (24**-0.5 with head_dim 8): the Config's compile-time scale and the
  // same value given in ForwardOptions to a Config without one are one computation.
  const Result t5 = run<ff::t5_decoder, 1>(false);
  CHECK(same_bits(t5.out, forward_with<ff::t5_decoder>(ff::t5_decoder::scale)));
  const Result gemma = run<ff::qk_norm_gemma, 1>(false);
  CHECK(same_bits(gemma.out, forward_with<ff::qk_norm_gemma>(ff::qk_norm_gemma::scale)));
  // Without either, T5's layer is scaled by 1/sqrt(6): not torch's.
  const std::vector<float> unscaled = forward_with<ff::t5_decoder>(0.0f);
  CHECK(emha::test::max_scaled_error(unscaled.data(), ff::t5_decoder::out, unscaled.size()) > 1e-2);
}

TEST_CASE("the features' weights are refused when missing or mis-sized or unused") {
  using Qwen = ff::qk_norm_qwen3;  // per_head: [head_dim] norms
  using Olmo = ff::qk_norm_olmo2;  // whole: [heads * head_dim], [kv_heads * head_dim]
  using T5 = ff::t5_decoder;       // relative bias [buckets, heads]
  using Wide = ff::head_dim_wide_gqa;
  const emha::MhaWeights qwen = emha::test::feature_weights<Qwen>(), olmo = emha::test::feature_weights<Olmo>(),
                         t5 = emha::test::feature_weights<T5>(), wide = emha::test::feature_weights<Wide>();
  auto q_layer = std::make_unique<emha::MultiHeadAttention<FeatureConfig<Qwen>>>();
  auto o_layer = std::make_unique<emha::MultiHeadAttention<FeatureConfig<Olmo>>>();
  auto t_layer = std::make_unique<emha::MultiHeadAttention<FeatureConfig<T5>>>();
  auto w_layer = std::make_unique<emha::MultiHeadAttention<FeatureConfig<Wide>>>();

  emha::MhaWeights w = qwen;
  w.q_norm_weight = {};
  CHECK(q_layer->set_weights(w) == Status::null_pointer);
  w = qwen;
  w.k_norm_weight = {};
  CHECK(q_layer->set_weights(w) == Status::null_pointer);
  w = qwen;
  w.q_norm_weight = {nullptr, Qwen::head_dim};
  CHECK(q_layer->set_weights(w) == Status::null_pointer);
  w = qwen;
  w.k_norm_weight.size -= 1;
  CHECK(q_layer->set_weights(w) == Status::size_mismatch);
  w = qwen;
  w.q_norm_weight = {Qwen::in_proj_weight, Qwen::heads * Qwen::head_dim};  // whole's size, per_head's config
  CHECK(q_layer->set_weights(w) == Status::size_mismatch);
  w = olmo;
  w.q_norm_weight = {Olmo::q_norm_weight, Olmo::head_dim};  // per_head's size, whole's config
  CHECK(o_layer->set_weights(w) == Status::size_mismatch);
  w = olmo;
  w.k_norm_weight = {Olmo::q_norm_weight, Olmo::heads * Olmo::head_dim};  // Q's size for K (GQA: K is narrower)
  CHECK(o_layer->set_weights(w) == Status::size_mismatch);
  w = wide;
  w.q_norm_weight = qwen.q_norm_weight;  // a norm given to a Config without QK-norm
  CHECK(w_layer->set_weights(w) == Status::invalid_argument);

  w = t5;
  w.relative_attention_bias = {};
  CHECK(t_layer->set_weights(w) == Status::null_pointer);
  w = t5;
  w.relative_attention_bias = {nullptr, T5::relative_buckets * T5::heads};
  CHECK(t_layer->set_weights(w) == Status::null_pointer);
  w = t5;
  w.relative_attention_bias.size -= 1;
  CHECK(t_layer->set_weights(w) == Status::size_mismatch);
  w = wide;
  w.relative_attention_bias = t5.relative_attention_bias;  // a table given to a Config without relative_bias
  CHECK(w_layer->set_weights(w) == Status::invalid_argument);

  // head_dim: projections sized for d_model / heads are refused.
  w = wide;
  w.in_proj_weight.size = (Wide::heads + 2 * Wide::kv_heads) * (Wide::d_model / Wide::heads) * Wide::d_model;
  CHECK(w_layer->set_weights(w) == Status::size_mismatch);
  w = wide;
  w.out_proj_weight.size = Wide::d_model * Wide::d_model;
  CHECK(w_layer->set_weights(w) == Status::size_mismatch);

  // Nothing was taken: these layers never had weights, so forward refuses to run.
  std::vector<float> out(T5::batch * T5::seq_q * T5::d_model, 7.0f);
  const auto x = emha::test::span_of(T5::query);
  CHECK(t_layer->forward(emha::test::fixture_shape<T5>(), x, x, x, {out.data(), out.size()}) == Status::invalid_argument);
  // The good weights are taken, and refused ones afterwards leave them in use.
  REQUIRE(t_layer->set_weights(t5) == Status::ok);
  w = t5;
  w.relative_attention_bias = {};
  CHECK(t_layer->set_weights(w) == Status::null_pointer);
  CHECK(t_layer->forward(emha::test::fixture_shape<T5>(), x, x, x, {out.data(), out.size()},
                         emha::test::feature_options<T5>()) == Status::ok);
  CHECK(emha::test::max_scaled_error(out.data(), T5::out, out.size()) <= emha::test::feature_tolerance<T5>());
  CHECK(q_layer->set_weights(qwen) == Status::ok);
  CHECK(o_layer->set_weights(olmo) == Status::ok);
  CHECK(w_layer->set_weights(wide) == Status::ok);
}

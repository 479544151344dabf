// SPDX-License-Identifier: Apache-2.0
// The options around attention on bad input and at the arena's edge: every new
// weight and input is checked before anything is written (set_weights keeps the previous
// weights; forward leaves out and the attention weights untouched), and the arena bound stays
// exact with every feature on. Parity of the features: test_seed_models.cpp.

#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "attention/seed_support.hpp"
#include "seed_fixtures/all.hpp"

using emha::Status;

namespace {

namespace sf = emha::seed_fixtures;

template <class F>
std::unique_ptr<emha::MultiHeadAttention<emha::test::SeedConfig<F>>> make_seed_mha() {
  auto mha = std::make_unique<emha::MultiHeadAttention<emha::test::SeedConfig<F>>>();
  REQUIRE(mha->set_weights(emha::test::seed_weights<F>()) == Status::ok);
  return mha;
}

// out and per-head attention weights of fixture F, filled with a sentinel.
template <class F>
struct Outputs {
  std::vector<float> out = std::vector<float>(F::batch * F::seq_q * F::d_model, 7.0f);
  std::vector<float> w = std::vector<float>(F::batch * F::heads * F::seq_q * F::seq_kv, 7.0f);
  emha::Span<float> out_span() { return {out.data(), out.size()}; }
  bool untouched() const {
    for (float x : out) if (x != 7.0f) return false;
    for (float x : w) if (x != 7.0f) return false;
    return true;
  }
};

template <class F>
emha::Span<const float> query_of() {
  return emha::test::span_of(F::query);
}

}  // namespace

TEST_CASE("set_weights checks the norm weights and the per-projection biases") {
  using Rms = sf::pre_ln_rms;  // RMSNorm: a weight, no bias
  emha::MultiHeadAttention<emha::test::SeedConfig<Rms>> rms;
  emha::MhaWeights w = emha::test::seed_weights<Rms>();
  w.norm_weight = {};
  CHECK(rms.set_weights(w) == Status::null_pointer);
  w.norm_weight = {Rms::norm_weight, Rms::d_model - 1};
  CHECK(rms.set_weights(w) == Status::size_mismatch);
  w = emha::test::seed_weights<Rms>();
  w.norm_bias = {Rms::norm_weight, Rms::d_model};  // RMSNorm has no bias
  CHECK(rms.set_weights(w) == Status::invalid_argument);

  using Ln = sf::pre_ln_layernorm;  // LayerNorm: weight and bias
  emha::MultiHeadAttention<emha::test::SeedConfig<Ln>> ln;
  w = emha::test::seed_weights<Ln>();
  w.norm_bias = {};
  CHECK(ln.set_weights(w) == Status::null_pointer);
  w.norm_bias = {nullptr, Ln::d_model};
  CHECK(ln.set_weights(w) == Status::null_pointer);

  using NoNorm = sf::rope_half;
  emha::MultiHeadAttention<emha::test::SeedConfig<NoNorm>> plain;
  w = emha::test::seed_weights<NoNorm>();
  static const float gamma[NoNorm::d_model] = {};
  w.norm_weight = gamma;  // a norm weight without a norm
  CHECK(plain.set_weights(w) == Status::invalid_argument);
  w = emha::test::seed_weights<NoNorm>();
  w.out_proj_bias = gamma;  // rope_half has no biases at all
  CHECK(plain.set_weights(w) == Status::invalid_argument);

  using Labml = sf::labml_nobias;  // Q and K without a bias, V and the output with one
  emha::MultiHeadAttention<emha::test::SeedConfig<Labml>> labml;
  w = emha::test::seed_weights<Labml>();
  static const float three[3 * Labml::d_model] = {};
  w.in_proj_bias = three;  // nn.MultiheadAttention's [3 * D]: only V's [D] is expected
  CHECK(labml.set_weights(w) == Status::size_mismatch);
  w = emha::test::seed_weights<Labml>();
  w.out_proj_bias = {};
  CHECK(labml.set_weights(w) == Status::null_pointer);
  CHECK(labml.set_weights(emha::test::seed_weights<Labml>()) == Status::ok);
}

TEST_CASE("positions are self-attention's: other inputs are invalid_argument, nothing written") {
  const auto check_cross = [](auto fixture) {
    using F = decltype(fixture);
    auto mha = make_seed_mha<F>();
    Outputs<F> o;
    const auto q = query_of<F>();
    const std::vector<float> copy(q.data, q.data + q.size);  // same values, another tensor
    const emha::Span<const float> k{copy.data(), copy.size()};
    const emha::ForwardOptions opt = emha::test::seed_options<F>();
    const emha::AttentionShape shape = emha::test::fixture_shape<F>();
    CHECK(mha->forward(shape, q, k, q, o.out_span(), opt) == Status::invalid_argument);
    CHECK(mha->forward(shape, q, q, k, o.out_span(), opt) == Status::invalid_argument);
    emha::AttentionShape shorter = shape;  // S_q != S_kv: query i is not key i
    shorter.seq_q -= 1;
    shorter.layout = emha::Layout::batch_first;
    CHECK(mha->forward(shorter, q, q, q, o.out_span(), emha::ForwardOptions{}) == Status::invalid_argument);
    CHECK(o.untouched());
    CHECK(mha->forward(shape, q, q, q, o.out_span(), opt) == Status::ok);  // the control
  };
  check_cross(sf::rope_half{});
  check_cross(sf::torchscale_xpos_subln{});
  check_cross(sf::alibi_h6{});
}

TEST_CASE("labml's attend mask and the score bias are checked against the shape") {
  using F = sf::labml_bias_cross;  // S_q 5, S_kv 9, batch 3; mask [1, S_kv, B]
  auto mha = make_seed_mha<F>();
  Outputs<F> o;
  const auto q = query_of<F>();
  const auto k = emha::test::span_of(F::key), v = emha::test::span_of(F::value);
  const emha::AttentionShape shape = emha::test::fixture_shape<F>();
  emha::ForwardOptions opt = emha::test::seed_options<F>();
  opt.masks.attend_rows = 2;  // neither S_q nor 1
  CHECK(mha->forward(shape, q, k, v, o.out_span(), opt) == Status::invalid_argument);
  opt = emha::test::seed_options<F>();
  opt.masks.attend_batch = 2;  // neither B nor 1
  CHECK(mha->forward(shape, q, k, v, o.out_span(), opt) == Status::invalid_argument);
  opt = emha::test::seed_options<F>();
  opt.masks.attend.size -= 1;
  CHECK(mha->forward(shape, q, k, v, o.out_span(), opt) == Status::size_mismatch);
  opt.masks.attend = {nullptr, 1};
  CHECK(mha->forward(shape, q, k, v, o.out_span(), opt) == Status::null_pointer);
  opt = emha::test::seed_options<F>();
  opt.masks.attend_rows = F::seq_q;  // [S_q, S_kv, B] needs S_q times the fixture's mask
  CHECK(mha->forward(shape, q, k, v, o.out_span(), opt) == Status::size_mismatch);

  std::vector<float> bias(F::batch * F::heads * F::seq_q * F::seq_kv, 0.0f);
  opt = emha::test::seed_options<F>();
  opt.masks.score_bias = {bias.data(), bias.size() - 1};
  CHECK(mha->forward(shape, q, k, v, o.out_span(), opt) == Status::size_mismatch);
  opt.masks.score_bias = {bias.data(), bias.size()};
  opt.masks.score_bias_shape = static_cast<emha::MaskShape>(7);
  CHECK(mha->forward(shape, q, k, v, o.out_span(), opt) == Status::invalid_argument);
  // An output over an input the call reads is refused: the score bias, a norm weight.
  opt.masks.score_bias_shape = emha::MaskShape::per_batch_head;
  std::vector<float> shared(bias.size() + o.out.size());
  opt.masks.score_bias = {shared.data(), bias.size()};
  CHECK(mha->forward(shape, q, k, v, {shared.data() + 1, o.out.size()}, opt) == Status::overlap);
  CHECK(o.untouched());
  // The control: a zero score bias changes nothing.
  opt.masks.score_bias = {bias.data(), bias.size()};
  CHECK(mha->forward(shape, q, k, v, o.out_span(), opt) == Status::ok);
  std::vector<float> plain(o.out.size());
  CHECK(mha->forward(shape, q, k, v, {plain.data(), plain.size()}, emha::test::seed_options<F>()) == Status::ok);
  CHECK(plain == o.out);
}

TEST_CASE("an output over the norm weights is refused") {
  using F = sf::pre_ln_rms;
  std::vector<float> buf(F::d_model + F::batch * F::seq_q * F::d_model);
  std::copy(std::begin(F::norm_weight), std::end(F::norm_weight), buf.begin());
  emha::MultiHeadAttention<emha::test::SeedConfig<F>> mha;
  emha::MhaWeights w = emha::test::seed_weights<F>();
  w.norm_weight = {buf.data(), F::d_model};
  REQUIRE(mha.set_weights(w) == Status::ok);
  const auto q = query_of<F>();
  const emha::Span<float> out{buf.data() + F::d_model - 1, F::batch * F::seq_q * F::d_model};
  CHECK(mha.forward(emha::test::fixture_shape<F>(), q, q, q, out, emha::test::seed_options<F>()) == Status::overlap);
  CHECK(buf[F::d_model] == 0.0f);
}

namespace {
// Every feature at once: xPos, a sub-LN LayerNorm, partial biases, key padding, an additive mask,
// labml's mask, a score bias and the attention weights, batch 2, seq-first.
struct Everything : emha::MhaConfig<32, 4, 9> {
  static constexpr std::size_t max_batch = 2;
  static constexpr emha::ProjectionBias projection_bias{false, true, true, true};
  static constexpr emha::Position position = emha::Position::xpos;
  static constexpr emha::NormPlacement norm = emha::NormPlacement::sub;
};
}  // namespace

TEST_CASE("the arena's high-water mark with every feature on is arena_bytes less alignment slack") {
  constexpr std::size_t D = 32, H = 4, S = 9, B = 2;
  std::vector<float> in_w(3 * D * D), in_b(2 * D), out_w(D * D), out_b(D), gamma(D, 1.0f), beta(D);
  for (std::size_t i = 0; i < in_w.size(); ++i) in_w[i] = float(int(i % 23) - 11) * 0.01f;
  for (std::size_t i = 0; i < out_w.size(); ++i) out_w[i] = float(int(i % 19) - 9) * 0.01f;
  std::vector<float> x(S * B * D), out(S * B * D), weights(B * H * S * S), add(S * S), bias(B * H * S * S);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 29) - 14) * 0.07f;
  std::vector<char> ignored(B * S, 0), attend(S * S * B, 1);
  ignored[S - 1] = 1;
  emha::MhaWeights w;
  w.in_proj_weight = {in_w.data(), in_w.size()};
  w.in_proj_bias = {in_b.data(), in_b.size()};
  w.out_proj_weight = {out_w.data(), out_w.size()};
  w.out_proj_bias = {out_b.data(), out_b.size()};
  w.norm_weight = {gamma.data(), D};
  w.norm_bias = {beta.data(), D};
  auto mha = std::make_unique<emha::MultiHeadAttention<Everything>>();
  REQUIRE(mha->set_weights(w) == Status::ok);
  emha::ForwardOptions opt;
  opt.masks.causal = true;
  opt.masks.key_ignored = {reinterpret_cast<const bool*>(ignored.data()), ignored.size()};
  opt.masks.attn_additive = {add.data(), add.size()};
  opt.masks.attend = {reinterpret_cast<const bool*>(attend.data()), attend.size()};
  opt.masks.attend_rows = S;
  opt.masks.attend_batch = B;
  opt.masks.score_bias = {bias.data(), bias.size()};
  opt.attn_weights = {weights.data(), weights.size()};
  opt.average_attn_weights = false;
  const emha::AttentionShape shape{S, S, B, emha::Layout::seq_first};
  const emha::Span<const float> q{x.data(), x.size()};
  using M = emha::MultiHeadAttention<Everything>;
  // The unfused path (attention weights out) holds the larger slot: its high water is the bound.
  REQUIRE(mha->forward(shape, q, q, q, {out.data(), out.size()}, opt) == Status::ok);
  // The owned arena is 64-byte aligned, so arena_bytes' 64-byte alignment allowances (Q|K|V, the
  // context, the task slots; in the slot, the scores) go unused, and nothing else may.
  const std::size_t used = mha->arena().high_water();
  MESSAGE("every feature: arena high water " << used << " of " << M::arena_bytes);
  CHECK(used <= M::arena_bytes);
  CHECK(M::arena_bytes - used <= 4 * 64);
  opt.attn_weights = {};  // and the fused path runs within it
  REQUIRE(mha->forward(shape, q, q, q, {out.data(), out.size()}, opt) == Status::ok);
  CHECK(mha->arena().high_water() == used);
  CHECK(M::position_table_bytes == 2 * S * (D / H / 2) * sizeof(float));
}

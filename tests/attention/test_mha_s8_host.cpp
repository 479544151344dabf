// SPDX-License-Identifier: Apache-2.0
// The s8 layer at sizes past the fixtures' (tests/attention/test_mha_s8.cpp checks every byte
// against the NumPy reference of TFLite's kernels at small sizes): forward() on the variant in use
// gives forward_reference()'s bytes, output and probabilities, where every block and tail of the
// passes is reached: over 64 rows and 64 keys (two blocks and a part), input widths and output
// channels that are not multiples of 4, head_dim 16, 32 and 6 (the last on the general pass
// everywhere), GQA, cross-attention, causal, key padding and a per-head mask, both layouts, a
// batch of 2. The weights, inputs, zero points and multipliers are random; the reference path's
// kernels are the ones test_mha_s8.cpp proves bit-exact.

#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "attention/fixtures/s8_layer.hpp"
#include "emha/attention/mha_s8.hpp"
#include "emha/emha.hpp"
#include "support/numeric.hpp"

namespace {

template <std::size_t D, std::size_t H, std::size_t KvH, std::size_t Dk, std::size_t Kdim, std::size_t Vdim,
          std::size_t Sq, std::size_t Skv>
struct Sizes : emha::MhaConfig<D, H, Sq, Skv> {
  static constexpr std::size_t kv_heads = KvH, head_dim = Dk, kdim = Kdim, vdim = Vdim, max_batch = 2;
  static constexpr emha::Arithmetic arithmetic = emha::Arithmetic::s8;
};

// Deterministic values in [lo, hi].
struct Random {
  std::uint64_t s;
  std::int32_t operator()(std::int32_t lo, std::int32_t hi) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return lo + std::int32_t((s >> 33) % std::uint64_t(hi - lo + 1));
  }
};

// A projection [rows x in]: weights over [-127, 127], biases, a multiplier per row with shifts
// around the ones that keep the outputs mostly inside int8 (some saturate).
struct Projection {
  std::vector<std::int8_t> weight;
  std::vector<std::int32_t> bias;
  std::vector<emha::QuantizedMultiplier> multiplier;
  Projection(std::size_t rows, std::size_t in, std::uint64_t seed, Random& r)
      : weight(rows * in), bias(rows), multiplier(rows) {
    emha::test::fill_int8(weight.data(), weight.size(), seed);
    for (auto& b : bias) b = r(-20000, 20000);
    for (auto& m : multiplier) m = {r(1 << 30, 0x7fffffff), r(-11, -7)};
  }
  emha::ProjectionS8 view() const {
    return {{weight.data(), weight.size()}, {bias.data(), bias.size()}, {multiplier.data(), multiplier.size()}};
  }
};

template <class C>
void check(const char* name, emha::Layout layout, bool causal, bool padding, bool per_head_mask, std::uint64_t seed) {
  using Layer = emha::MultiHeadAttention<C>;
  constexpr emha::detail::MhaDims d = Layer::dims;
  constexpr std::size_t batch = 2, sq = C::max_seq_q, skv = C::max_seq_kv;
  INFO("case " << name);
  Random r{seed};
  const Projection q(d.q_dim(), d.d_model, seed + 1, r), k(d.kv_dim(), d.kdim, seed + 2, r),
      v(d.kv_dim(), d.vdim, seed + 3, r), out(d.d_model, d.q_dim(), seed + 4, r);
  emha::MhaS8Weights w;
  w.q = q.view(), w.k = k.view(), w.v = v.view(), w.out = out.view();
  w.zero_point_q = r(-20, 20), w.zero_point_k = r(-20, 20), w.zero_point_v = r(-20, 20);
  w.zero_point_scores = r(-20, 20), w.zero_point_context = r(-20, 20), w.zero_point_out = r(-20, 20);
  w.scores = {r(1 << 30, 0x7fffffff), -9};
  w.context = {r(1 << 30, 0x7fffffff), -7};
  w.softmax = s8_fixtures::self_mha::weights().softmax;
  const auto layer = std::make_unique<Layer>();
  REQUIRE(layer->set_weights(w) == emha::Status::ok);

  std::vector<std::int8_t> query(batch * sq * d.d_model), key(batch * skv * d.kdim), value(batch * skv * d.vdim);
  emha::test::fill_int8(query.data(), query.size(), seed + 5);
  emha::test::fill_int8(key.data(), key.size(), seed + 6);
  emha::test::fill_int8(value.data(), value.size(), seed + 7);
  emha::ForwardOptionsS8 o;
  o.masks.causal = causal;
  bool ignored[batch * skv] = {};
  for (std::size_t j = 0; j < skv; ++j) ignored[skv + j] = padding && j % 7 == 3;  // the second sequence's
  if (padding) o.masks.key_ignored = {ignored, batch * skv};
  std::vector<std::uint8_t> masked(d.heads * sq * skv);
  for (auto& m : masked) m = r(0, 5) == 0;
  if (per_head_mask) {
    o.masks.attn_masked = {reinterpret_cast<const bool*>(masked.data()), masked.size()};
    o.masks.attn_mask_shape = emha::MaskShape::per_head;
  }
  const emha::AttentionShape shape{sq, skv, batch, layout};
  const std::size_t n_out = batch * sq * d.d_model, n_probs = batch * d.heads * sq * skv;
  std::vector<std::int8_t> y(n_out), y_ref(n_out), p(n_probs), p_ref(n_probs);
  const emha::Span<const std::int8_t> qs{query.data(), query.size()}, ks{key.data(), key.size()},
      vs{value.data(), value.size()};
  o.attn_weights = {p.data(), p.size()};
  REQUIRE(layer->forward(shape, qs, ks, vs, {y.data(), n_out}, o) == emha::Status::ok);
  o.attn_weights = {p_ref.data(), p_ref.size()};
  REQUIRE(layer->forward_reference(shape, qs, ks, vs, {y_ref.data(), n_out}, o) == emha::Status::ok);
  std::size_t bad_out = 0, bad_probs = 0, saturated = 0;
  for (std::size_t i = 0; i < n_out; ++i) {
    bad_out += y[i] != y_ref[i];
    saturated += y_ref[i] == 127 || y_ref[i] == -128;
  }
  for (std::size_t i = 0; i < n_probs; ++i) bad_probs += p[i] != p_ref[i];
  CHECK(bad_out == 0);
  CHECK(bad_probs == 0);
  CHECK(saturated < n_out / 4);  // the multipliers keep most outputs inside int8: the bytes say something
}

}  // namespace

TEST_CASE("s8 layer at larger sizes: forward gives forward_reference's bytes") {
  using emha::Layout;
  // d_model 70 (inputs and output channels past a multiple of 4), 130 queries, 150 keys, GQA 4 on 2
  check<Sizes<70, 4, 2, 16, 70, 70, 130, 150>>("gqa_causal_padding", Layout::batch_first, true, true, false, 11);
  // cross-attention from 45- and 51-wide keys and values, head_dim 32, a per-head mask
  check<Sizes<96, 3, 3, 32, 45, 51, 37, 67>>("cross_per_head", Layout::seq_first, false, false, true, 22);
  // head_dim 6: the general pass on every variant
  check<Sizes<36, 6, 6, 6, 36, 36, 33, 29>>("head_dim_6", Layout::batch_first, true, false, false, 33);
}

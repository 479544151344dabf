// SPDX-License-Identifier: Apache-2.0
// Cross-attention over static K/V (torchscale's encoder_decoder_attention with
// static_kv): the encoder's key and value projected once into a KvCache (project_kv), then the
// decoder's queries attended to them one at a time or in chunks (forward_static_kv), give what
// torch.nn.MultiheadAttention gave for all queries at once (tests/attention/gen_fixtures.py:
// cross-attention with S_q != S_kv, kdim/vdim != d_model, a causal cross mask, key padding, a
// boolean attn_mask), within the nn.MultiheadAttention suite's budget (fixture_tolerance); the
// cache is only read; and every bad input.

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "attention/fixture_support.hpp"
#include "emha/emha.hpp"
#include "fixtures/all.hpp"
#include "support/numeric.hpp"

namespace {

using emha::Span;
using emha::Status;

template <class F>
using Config = emha::test::FixtureConfig<F>;
template <class F>
using Cache = emha::KvCache<Config<F>, F::seq_kv, F::batch, emha::ArenaOwnership::caller>;

// Row (b, t) of a fixture tensor [B, S, D] or [S, B, D].
template <class F>
std::size_t query_row(std::size_t b, std::size_t t) {
  return (F::batch_first ? b * F::seq_q + t : t * F::batch + b) * F::d_model;
}

// The fixture's queries `chunk` at a time (the last chunk shorter) over its projected K/V.
template <class F>
void decode_cross(std::size_t chunk) {
  static_assert(!F::attn_mask_per_head, "a per-head mask: cut it per call as the shared one is");
  constexpr std::size_t D = F::d_model, B = F::batch;
  auto mha = std::make_unique<emha::MultiHeadAttention<Config<F>>>();
  static float storage[Cache<F>::floats];
  auto cache = std::make_unique<Cache<F>>(storage);
  REQUIRE(mha->set_weights(emha::test::fixture_weights<F>()) == Status::ok);
  const emha::AttentionShape kv_shape = emha::test::fixture_shape<F>();
  REQUIRE(mha->project_kv(kv_shape, emha::test::span_of(F::key), emha::test::span_of(F::value), *cache) ==
          Status::ok);
  for (std::size_t b = 0; b < B; ++b) REQUIRE(cache->length(b) == F::seq_kv);
  const std::vector<float> cached(storage, storage + Cache<F>::floats);

  std::vector<float> got(B * F::seq_q * D, std::nanf(""));
  for (std::size_t t = 0; t < F::seq_q; t += chunk) {
    const std::size_t n = F::seq_q - t < chunk ? F::seq_q - t : chunk;
    std::vector<float> x(B * n * D), y(B * n * D, -7.0f);
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t i = 0; i < n; ++i)
        std::memcpy(&x[(b * n + i) * D], &F::query[query_row<F>(b, t + i)], D * sizeof(float));
    emha::ForwardOptions o;
    o.masks = emha::test::fixture_masks<F>();
    o.masks.causal_offset = t;  // query i of this call is query t + i of the fixture (top-left)
    if (o.masks.attn_masked.data) o.masks.attn_masked = {o.masks.attn_masked.data + t * F::seq_kv, n * F::seq_kv};
    if (o.masks.attn_additive.data)
      o.masks.attn_additive = {o.masks.attn_additive.data + t * F::seq_kv, n * F::seq_kv};
    const emha::AttentionShape shape{n, F::seq_kv, B, emha::Layout::batch_first};
    REQUIRE(mha->forward_static_kv(shape, {x.data(), x.size()}, {y.data(), y.size()}, *cache, o) == Status::ok);
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t i = 0; i < n; ++i)
        std::memcpy(&got[query_row<F>(b, t + i)], &y[(b * n + i) * D], D * sizeof(float));
  }
  const double err = emha::test::max_scaled_error(got.data(), F::out, got.size());
  INFO(std::string(F::name) << ", chunks of " << chunk << ": max scaled |emha - torch| " << err);
  CHECK(err <= emha::test::fixture_tolerance<F>());
  // The cache is only read: its bytes and lengths are what project_kv left.
  CHECK(std::memcmp(cached.data(), storage, cached.size() * sizeof(float)) == 0);
  for (std::size_t b = 0; b < B; ++b) CHECK(cache->length(b) == F::seq_kv);
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("cross-attention over static K/V equals nn.MultiheadAttention (PyTorch)", F, static_kv) {
  for (std::size_t chunk : {std::size_t(1), std::size_t(3), F::seq_q}) decode_cross<F>(chunk);
}
TEST_CASE_TEMPLATE_APPLY(static_kv, std::tuple<emha::fixtures::cross, emha::fixtures::kvdim, emha::fixtures::causal_cross,
                                               emha::fixtures::key_padding, emha::fixtures::bool_mask,
                                               emha::fixtures::seq_first_b3>);

namespace {
struct Cross : emha::MhaConfig<32, 4, 4, 8> {
  static constexpr std::size_t kdim = 24, max_batch = 2;
};
struct Rope : Cross {
  static constexpr emha::Position position = emha::Position::rope;
  static constexpr std::size_t kdim = 32;
};
struct CrossWeights {
  std::vector<float> wq = emha::test::uniform(32 * 32, 31), wk = emha::test::uniform(32 * 24, 32),
                     wv = emha::test::uniform(32 * 32, 33), b = emha::test::uniform(96, 34),
                     wo = emha::test::uniform(32 * 32, 35), bo = emha::test::uniform(32, 36);
  emha::MhaWeights get() const {
    emha::MhaWeights m;
    m.q_proj_weight = {wq.data(), wq.size()};
    m.k_proj_weight = {wk.data(), wk.size()};
    m.v_proj_weight = {wv.data(), wv.size()};
    m.in_proj_bias = {b.data(), b.size()};
    m.out_proj_weight = {wo.data(), wo.size()};
    m.out_proj_bias = {bo.data(), bo.size()};
    return m;
  }
};
}  // namespace

TEST_CASE("static K/V: every bad input is a status, nothing written") {
  const CrossWeights cw;
  auto mha = std::make_unique<emha::MultiHeadAttention<Cross>>();
  REQUIRE(mha->set_weights(cw.get()) == Status::ok);
  static float storage[emha::KvCache<Cross, 8, 2, emha::ArenaOwnership::caller>::floats];
  emha::KvCache<Cross, 8, 2, emha::ArenaOwnership::caller> cache(storage);
  const auto key = emha::test::uniform(2 * 8 * 24, 37), value = emha::test::uniform(2 * 8 * 32, 38);
  const auto q = emha::test::uniform(2 * 4 * 32, 39);
  std::vector<float> out(2 * 4 * 32, -7.0f);
  const Span<const float> ks{key.data(), key.size()}, vs{value.data(), value.size()}, qs{q.data(), q.size()};
  const Span<float> ys{out.data(), out.size()};

  CHECK(mha->forward_static_kv({1, 8, 1}, qs, ys, cache) == Status::invalid_argument);  // nothing projected
  CHECK(mha->project_kv({1, 9, 1}, ks, vs, cache) == Status::too_long);                // above the capacity
  CHECK(mha->project_kv({1, 8, 3}, ks, vs, cache) == Status::too_long);                // above the batch
  CHECK(mha->project_kv({1, 8, 2}, {key.data(), 100}, vs, cache) == Status::size_mismatch);
  CHECK(mha->project_kv({1, 0, 2}, ks, vs, cache) == Status::invalid_argument);
  CHECK(mha->project_kv({1, 8, 2}, {storage, 2 * 8 * 24}, vs, cache) == Status::overlap);
  CHECK(cache.length(0) == 0);
  REQUIRE(mha->project_kv({1, 8, 2}, ks, vs, cache) == Status::ok);
  REQUIRE(mha->project_kv({1, 5, 1}, ks, vs, cache) == Status::ok);  // sequence 0 re-projected: 5 keys
  CHECK(cache.length(0) == 5);
  CHECK(cache.length(1) == 8);
  CHECK(mha->forward_static_kv({4, 5, 2}, qs, ys, cache) == Status::invalid_argument);  // seq_kv: the most, 8
  CHECK(mha->forward_static_kv({4, 8, 3}, qs, ys, cache) == Status::too_long);
  CHECK(mha->forward_static_kv({4, 8, 2}, qs, {storage, ys.size}, cache) == Status::overlap);
  CHECK(out[0] == -7.0f);
  CHECK(mha->forward_static_kv({4, 8, 2}, qs, ys, cache) == Status::ok);  // sequence 0 ignores keys 5..7
  CHECK(std::isfinite(out[0]));

  SUBCASE("positions are self-attention's: forward_static_kv refuses them") {
    auto rope = std::make_unique<emha::MultiHeadAttention<Rope>>();
    std::vector<float> w(96 * 32);
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = cw.wq[i % cw.wq.size()];
    emha::MhaWeights m = cw.get();
    m.q_proj_weight = m.k_proj_weight = m.v_proj_weight = {};
    m.in_proj_weight = {w.data(), w.size()};
    REQUIRE(rope->set_weights(m) == Status::ok);
    emha::KvCache<Rope, 8, 1> rc;
    REQUIRE(rope->project_kv({1, 8, 1}, {q.data(), 8 * 32}, {q.data(), 8 * 32}, rc) == Status::ok);
    std::vector<float> y(32, -7.0f);
    CHECK(rope->forward_static_kv({1, 8, 1}, {q.data(), 32}, {y.data(), 32}, rc) == Status::invalid_argument);
    CHECK(y[0] == -7.0f);
  }
}

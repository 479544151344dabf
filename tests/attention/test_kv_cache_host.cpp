// SPDX-License-Identifier: Apache-2.0
// Incremental decoding through a KvCache against PyTorch on the host: the layer and
// its cache owning their memory (heap objects), the cache at its default capacity (a sliding
// window's: twice W) and at the tightest, decoding a fixture's T tokens one at a time, in chunks of
// 3, in chunks as large as the cache takes, and on the reference path gives what torch's one causal
// forward over all T tokens gave (tests/attention/gen_seed_fixtures.py: MHA with RoPE, GQA 8 on 2,
// MQA with ALiBi, GQA with key padding and pre-LN, sub-LN, sliding windows against torch's band
// mask; torchscale's incremental decoding with xPos and sub-LN, its own steps), within the seed
// suite's float32 budget (seed_tolerance); a batch whose sequences have different lengths; and
// every bad input of the cache path. Decoding with caller storage and static buffers, on both
// targets, is test_kv_cache.cpp's.

#include <doctest/doctest.h>

#include <cmath>
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "attention/seed_support.hpp"
#include "seed_fixtures/all.hpp"
#include "support/numeric.hpp"
#include "support/parity_errors.hpp"

namespace {

using emha::AttentionShape;
using emha::Span;
using emha::Status;

// Row (b, t) of a fixture tensor [B, T, D] or [T, B, D].
template <class F>
std::size_t row_of(std::size_t b, std::size_t t) {
  return (F::batch_first ? b * F::seq_q + t : t * F::batch + b) * F::d_model;
}

// One call: tokens [t, t + n) of sequences 0 .. batch - 1 (sequence b starts at starts[b]).
// x and out are [batch, n, D]; the fixture's key padding mask, cut to the call's keys (key k of
// sequence b is position cache.first_key(b, n) + k: 0 + k unless a sliding window rolled it).
template <class F, class Mha, class Cache>
Status step(Mha& mha, Cache& cache, const std::size_t* starts, std::size_t batch, std::size_t n,
            bool reference, std::vector<float>& got) {
  constexpr std::size_t D = F::d_model;
  std::vector<float> x(batch * n * D), y(batch * n * D, -7.0f);
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t i = 0; i < n; ++i)
      std::memcpy(&x[(b * n + i) * D], &F::query[row_of<F>(b, starts[b] + i)], D * sizeof(float));
  const AttentionShape shape{n, cache.keys(n, batch), batch, emha::Layout::batch_first};
  emha::ForwardOptions o;
  o.masks.causal = true;
  std::unique_ptr<bool[]> ignored(new bool[batch * shape.seq_kv]);
  if constexpr (std::is_array_v<std::remove_reference_t<decltype(F::key_padding_mask)>>) {
    // [B, T]: the first seq_kv keys of each row
    for (std::size_t b = 0; b < batch; ++b)
      for (std::size_t k = 0; k < shape.seq_kv; ++k) {
        const std::size_t j = cache.first_key(b, n) + k;
        ignored[b * shape.seq_kv + k] = j < F::seq_kv ? F::key_padding_mask[b * F::seq_kv + j] : true;
      }
    o.masks.key_ignored = {ignored.get(), batch * shape.seq_kv};
  }
  const Span<const float> xs{x.data(), x.size()};
  const Status s = reference ? mha.forward_reference(shape, xs, {y.data(), y.size()}, cache, o)
                             : mha.forward(shape, xs, {y.data(), y.size()}, cache, o);
  if (s == Status::ok)
    for (std::size_t b = 0; b < batch; ++b)
      for (std::size_t i = 0; i < n; ++i)
        std::memcpy(&got[row_of<F>(b, starts[b] + i)], &y[(b * n + i) * D], D * sizeof(float));
  return s;
}

template <class F>
using Layer = emha::MultiHeadAttention<emha::test::SeedConfig<F>>;
template <class F, std::size_t Capacity = emha::detail::kv_default_capacity<emha::test::SeedConfig<F>>()>
using Cache = emha::KvCache<emha::test::SeedConfig<F>, Capacity>;

// The most new tokens one call takes: the capacity, less a rolling cache's window - 1.
template <class C>
constexpr std::size_t max_chunk = C::capacity - (C::window ? C::window - 1 : 0);

// Every token of every sequence, in chunks of `chunk` (the last one shorter) after a first chunk
// of `first` tokens (0: `chunk`).
template <class F, class C = Cache<F>>
void decode_all(std::size_t chunk, bool reference, std::size_t first = 0) {
  auto mha = std::make_unique<Layer<F>>();
  auto cache = std::make_unique<C>();
  REQUIRE(mha->set_weights(emha::test::seed_weights<F>()) == Status::ok);
  std::vector<float> got(F::batch * F::seq_q * F::d_model, std::nanf(""));
  for (std::size_t t = 0; t < F::seq_q;) {
    const std::size_t want = t == 0 && first ? first : chunk, n = F::seq_q - t < want ? F::seq_q - t : want;
    const std::size_t starts[2] = {t, t};
    REQUIRE(step<F>(*mha, *cache, starts, F::batch, n, reference, got) == Status::ok);
    for (std::size_t b = 0; b < F::batch; ++b) REQUIRE(cache->length(b) == t + n);
    t += n;
  }
  const auto e = emha::test::parity_errors<F>(got.data(), got.size());
  const double vs_torch = emha::test::max_scaled_error(got.data(), F::out, got.size());
  INFO(std::string(F::name) << ", capacity " << C::capacity << ", first " << first << ", chunks of " << chunk << (reference ? ", reference" : "") << ": max |emha - f64| "
               << e.mine << ", torch f32 " << e.theirs << ", max scaled |emha - torch| " << vs_torch);
  CHECK(vs_torch <= emha::test::seed_tolerance<F>());
  if (chunk == 1 && !reference)
    MESSAGE("decode parity vs float64, " << std::string(F::name) << " one token at a time"
                                         << (first ? " after a first step" : "") << ", capacity " << C::capacity
                                         << ": emha max " << e.mine
                                         << ", torch float32 max " << e.theirs << ", ratio " << e.mine / e.theirs);
  CHECK(mha->arena().high_water() <= Layer<F>::arena_bytes);
}

// Sequence 1 shorter than sequence 0: a prefill of both padded to T - 2 tokens, sequence 1
// truncated to T - 4 (its last two rows were padding the causal mask kept out of the others),
// then decode steps of the batch together, sequence 0 two positions ahead.
template <class F>
void decode_ragged() {
  static_assert(F::batch == 2);
  auto mha = std::make_unique<Layer<F>>();
  auto cache = std::make_unique<Cache<F>>();
  REQUIRE(mha->set_weights(emha::test::seed_weights<F>()) == Status::ok);
  constexpr std::size_t T = F::seq_q, D = F::d_model;
  std::vector<float> got(2 * T * D, std::nanf(""));
  const std::size_t zero[2] = {0, 0};
  REQUIRE(step<F>(*mha, *cache, zero, 2, T - 2, false, got) == Status::ok);
  REQUIRE(cache->truncate(1, T - 4) == Status::ok);
  for (std::size_t j = 0; j < D; ++j) got[row_of<F>(1, T - 4) + j] = got[row_of<F>(1, T - 3) + j] = std::nanf("");
  for (std::size_t t = 0; t < 2; ++t) {
    const std::size_t starts[2] = {cache->length(0), cache->length(1)};
    REQUIRE(step<F>(*mha, *cache, starts, 2, 1, false, got) == Status::ok);
  }
  CHECK(cache->length(0) == T);
  CHECK(cache->length(1) == T - 2);
  std::size_t bad = 0, checked = 0;
  const double tol = emha::test::seed_tolerance<F>();
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t t = 0; t < (b == 0 ? T : T - 2); ++t)
      for (std::size_t j = 0; j < D; ++j, ++checked) {
        const float want = F::out[row_of<F>(b, t) + j], y = got[row_of<F>(b, t) + j];
        bad += !(std::fabs(double(y) - want) <= tol * (1 + std::fabs(want)));
      }
  INFO(std::string(F::name) << ": " << checked << " outputs checked");
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("decoding through a KvCache equals one causal forward (PyTorch)", F, cache_parity) {
  for (std::size_t chunk : {std::size_t(1), std::size_t(3), max_chunk<Cache<F>>}) decode_all<F>(chunk, false);
  decode_all<F>(1, true);
  // torchscale's incremental decoding (the fixture's own steps): a first step, then one at a time.
  if constexpr (F::decode_prefill > 0) {
    decode_all<F>(1, false, F::decode_prefill);
    decode_all<F>(1, true, F::decode_prefill);
  }
  if constexpr (F::batch == 2 && F::sliding_window == 0) decode_ragged<F>();
  if constexpr (F::sliding_window > 0) {
    // The tightest rolling cache, W positions: it rolls at every step once full.
    decode_all<F, Cache<F, F::sliding_window>>(1, false);
    decode_all<F, Cache<F, F::sliding_window>>(1, true);
    // W + 2: rolls every third step, and takes chunks of 3.
    decode_all<F, Cache<F, F::sliding_window + 2>>(3, false);
  }
}
TEST_CASE_TEMPLATE_APPLY(cache_parity,
                         std::tuple<emha::seed_fixtures::rope_half, emha::seed_fixtures::gqa_rope,
                                    emha::seed_fixtures::mqa_alibi, emha::seed_fixtures::gqa_padding_pre_ln,
                                    emha::seed_fixtures::alibi_h6, emha::seed_fixtures::sub_ln_rms_alibi,
                                    emha::seed_fixtures::rope_interleaved_partial,
                                    emha::seed_fixtures::window_gqa_rope,
                                    emha::seed_fixtures::window_alibi_padding,
                                    emha::seed_fixtures::torchscale_xpos_decode>);

namespace {

struct Gqa : emha::MhaConfig<64, 8, 4, 16> {  // d_k 8, kv_dim 16
  static constexpr std::size_t kv_heads = 2;
  static constexpr std::size_t max_batch = 2;
  static constexpr emha::Position position = emha::Position::rope;
};

// Random weights of Gqa's sizes (in_proj_weight [64 + 2 * 16, 64]).
struct GqaWeights {
  std::vector<float> w = emha::test::uniform(96 * 64, 11, -0.2f, 0.2f), b = emha::test::uniform(96, 12),
                     wo = emha::test::uniform(64 * 64, 13, -0.2f, 0.2f), bo = emha::test::uniform(64, 14);
  emha::MhaWeights get() const {
    emha::MhaWeights m;
    m.in_proj_weight = {w.data(), w.size()};
    m.in_proj_bias = {b.data(), b.size()};
    m.out_proj_weight = {wo.data(), wo.size()};
    m.out_proj_bias = {bo.data(), bo.size()};
    return m;
  }
};

}  // namespace

// The cache's bytes are exactly its positions' K | V rows; the arena does not grow with a cache.
static_assert(emha::KvCache<Gqa>::kv_dim == 16);
static_assert(emha::KvCache<Gqa>::bytes == 2 * 16 * (2 * 16) * sizeof(float));
static_assert(emha::KvCache<Gqa, 5, 1>::bytes == 5 * 32 * sizeof(float));
static_assert(emha::KvCache<Gqa, 5, 1, emha::ArenaOwnership::caller>::floats == 160);

TEST_CASE("KvCache: lengths, truncate, reset and every bad input") {
  const GqaWeights gw;
  auto mha = std::make_unique<emha::MultiHeadAttention<Gqa>>();
  REQUIRE(mha->set_weights(gw.get()) == Status::ok);
  static float storage[emha::KvCache<Gqa, 8, 1, emha::ArenaOwnership::caller>::floats];
  emha::KvCache<Gqa, 8, 1, emha::ArenaOwnership::caller> cache(storage);
  const auto x = emha::test::uniform(2 * 4 * 64, 15);
  std::vector<float> out(2 * 4 * 64, -7.0f);
  const Span<const float> xs{x.data(), 4 * 64};
  const Span<float> ys{out.data(), 4 * 64};
  emha::ForwardOptions causal;
  causal.masks.causal = true;

  CHECK(mha->forward({4, 4, 1}, xs, ys, cache, causal) == Status::ok);  // prefill 4
  CHECK(cache.length(0) == 4);
  CHECK(mha->forward({1, 5, 1}, {x.data(), 64}, {out.data(), 64}, cache, causal) == Status::ok);
  CHECK(cache.length(0) == 5);

  std::vector<float> before_cache(storage, storage + 8 * 32), before_out = out;
  const auto untouched = [&] {
    return cache.length(0) == 5 && std::equal(before_out.begin(), before_out.end(), out.begin()) &&
           std::equal(before_cache.begin(), before_cache.end(), storage);
  };
  SUBCASE("appending past the capacity is too_long, cache and out untouched") {
    CHECK(mha->forward({4, 9, 1}, xs, ys, cache, causal) == Status::too_long);
    CHECK(untouched());
  }
  SUBCASE("seq_kv must be the cached length plus the new tokens") {
    CHECK(mha->forward({1, 5, 1}, {x.data(), 64}, {out.data(), 64}, cache, causal) == Status::invalid_argument);
    CHECK(mha->forward({1, 7, 1}, {x.data(), 64}, {out.data(), 64}, cache, causal) == Status::invalid_argument);
    CHECK(untouched());
  }
  SUBCASE("a batch beyond the cache's is too_long") {
    CHECK(mha->forward({1, 6, 2}, {x.data(), 128}, {out.data(), 128}, cache, causal) == Status::too_long);
    CHECK(untouched());
  }
  SUBCASE("out sharing bytes with the cache is overlap") {
    CHECK(mha->forward({1, 6, 1}, {x.data(), 64}, {storage + 200, 64}, cache, causal) == Status::overlap);
    CHECK(cache.length(0) == 5);
  }
  SUBCASE("truncate beyond the length or the batch is invalid_argument; truncate and reset work") {
    CHECK(cache.truncate(0, 6) == Status::invalid_argument);
    CHECK(cache.truncate(1, 0) == Status::invalid_argument);
    CHECK(cache.length(0) == 5);
    CHECK(cache.length(1) == 0);
    CHECK(cache.truncate(0, 2) == Status::ok);
    CHECK(cache.length(0) == 2);
    CHECK(mha->forward({1, 3, 1}, {x.data(), 64}, {out.data(), 64}, cache, causal) == Status::ok);
    CHECK(cache.length(0) == 3);
    cache.reset();
    CHECK(cache.length(0) == 0);
  }
}

TEST_CASE("KvCache: a truncated and re-decoded token gives the same bits") {
  const GqaWeights gw;
  auto mha = std::make_unique<emha::MultiHeadAttention<Gqa>>();
  REQUIRE(mha->set_weights(gw.get()) == Status::ok);
  auto cache = std::make_unique<emha::KvCache<Gqa>>();
  const auto x = emha::test::uniform(6 * 64, 16);
  std::vector<float> a(64), b(64), prefill(4 * 64);
  emha::ForwardOptions causal;
  causal.masks.causal = true;
  REQUIRE(mha->forward({4, 4, 1}, {x.data(), 4 * 64}, {prefill.data(), prefill.size()}, *cache, causal) == Status::ok);
  REQUIRE(mha->forward({1, 5, 1}, {x.data() + 4 * 64, 64}, {a.data(), 64}, *cache, causal) == Status::ok);
  REQUIRE(cache->truncate(0, 4) == Status::ok);  // speculative decoding's rejected token
  REQUIRE(mha->forward({1, 5, 1}, {x.data() + 4 * 64, 64}, {b.data(), 64}, *cache, causal) == Status::ok);
  CHECK(a == b);
}

namespace {
struct Window : Gqa {  // W = 3 keys; positions (RoPE's table) up to max_seq_kv = 16
  static constexpr std::size_t sliding_window = 3;
};
}  // namespace

// A rolling cache's bytes depend on the window, not on the sequence: twice W positions by default.
static_assert(emha::KvCache<Window>::capacity == 6 && emha::KvCache<Window>::window == 3);
static_assert(emha::KvCache<Window>::bytes == 2 * 6 * (2 * 16) * sizeof(float));
static_assert(emha::KvCache<Window, 2>::window == 0);  // a window wider than the cache: no roll

TEST_CASE("KvCache with a sliding window: rolls, keys, first_key, truncate and every bad input") {
  const GqaWeights gw;
  auto mha = std::make_unique<emha::MultiHeadAttention<Window>>();
  REQUIRE(mha->set_weights(gw.get()) == Status::ok);
  emha::KvCache<Window, 6, 1> cache;  // takes at most 6 - (3 - 1) = 4 new positions per call
  const auto x = emha::test::uniform(16 * 64, 21);
  std::vector<float> out(16 * 64, -7.0f);
  emha::ForwardOptions causal;
  causal.masks.causal = true;
  const auto call = [&](std::size_t n, std::size_t keys) {
    return mha->forward({n, keys, 1}, {x.data(), n * 64}, {out.data(), n * 64}, cache, causal);
  };

  CHECK(call(5, 5) == Status::too_long);  // more than max_seq_q (4) at once
  CHECK(cache.length(0) == 0);
  CHECK(cache.keys(4) == 4);
  REQUIRE(call(4, 4) == Status::ok);  // holds positions 0..3
  CHECK(cache.keys(2) == 6);          // fits: no roll
  CHECK(cache.first_key(0, 2) == 0);
  CHECK(cache.keys(3) == 5);          // rolls first: keeps 2, 3 and appends 4..6
  CHECK(cache.first_key(0, 3) == 2);
  CHECK(call(3, 7) == Status::invalid_argument);  // seq_kv must be keys(3)
  REQUIRE(call(3, 5) == Status::ok);
  CHECK(cache.length(0) == 7);
  CHECK(cache.first_key(0) == 2);
  CHECK(cache.truncate(0, 3) == Status::invalid_argument);  // position 3's window needs key 1
  CHECK(cache.truncate(0, 4) == Status::ok);                // needs keys 2, 3: held
  CHECK(cache.length(0) == 4);

  SUBCASE("positions stay absolute, up to RoPE's table") {
    while (cache.length(0) < 16) REQUIRE(call(1, cache.keys(1)) == Status::ok);
    CHECK(cache.first_key(0) == 10);
    CHECK(call(1, cache.keys(1)) == Status::too_long);
    CHECK(cache.length(0) == 16);
  }
  SUBCASE("a window is self-attention's: a forward with other keys is invalid_argument") {
    const auto kv = emha::test::uniform(4 * 64, 22);
    CHECK(mha->forward({4, 4, 1}, {x.data(), 4 * 64}, {kv.data(), kv.size()}, {kv.data(), kv.size()},
                       {out.data(), 4 * 64}, causal) == Status::invalid_argument);
  }
  SUBCASE("reset empties the rolled cache") {
    cache.reset();
    CHECK(cache.length(0) == 0);
    CHECK(cache.first_key(0) == 0);
    CHECK(cache.keys(4) == 4);
  }
}

namespace {
struct WideWindow : Window {  // queries up to the cache's capacity in one call
  static constexpr std::size_t max_seq_q = 8;
};
}  // namespace

// One call takes up to Capacity - min(held, W - 1) new positions: a rolling cache that holds
// fewer than W - 1 rows keeps all of them, so it takes more than Capacity - W + 1.
TEST_CASE("a rolling KvCache takes Capacity - min(held, W - 1) new positions per call") {
  const GqaWeights gw;
  auto mha = std::make_unique<emha::MultiHeadAttention<WideWindow>>();
  REQUIRE(mha->set_weights(gw.get()) == Status::ok);
  emha::KvCache<WideWindow, 6, 1> cache;  // W = 3: W - 1 = 2 rows kept when it rolls
  const auto x = emha::test::uniform(8 * 64, 23);
  std::vector<float> out(8 * 64, -7.0f);
  emha::ForwardOptions causal;
  causal.masks.causal = true;
  const auto call = [&](std::size_t n) {
    return mha->forward({n, cache.keys(n), 1}, {x.data(), n * 64}, {out.data(), n * 64}, cache, causal);
  };
  CHECK(call(7) == Status::too_long);  // held 0: at most 6
  CHECK(call(6) == Status::ok);        // held 0: 6 > Capacity - W + 1 = 4
  cache.reset();
  REQUIRE(call(1) == Status::ok);      // held 1 < W - 1: at most 6 - 1 = 5
  CHECK(call(6) == Status::too_long);
  CHECK(cache.length(0) == 1);
  CHECK(call(5) == Status::ok);        // fits without a roll
  CHECK(cache.length(0) == 6);
  CHECK(call(5) == Status::too_long);  // held 6 >= W - 1: at most 6 - 2 = 4
  CHECK(call(4) == Status::ok);        // rolls: keeps positions 4, 5, appends 6..9
  CHECK(cache.length(0) == 10);
  CHECK(cache.first_key(0) == 4);
}

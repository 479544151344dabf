// SPDX-License-Identifier: Apache-2.0
#include "no_heap_attention.hpp"

#include "attention/fixture_support.hpp"
#include "attention/seed_support.hpp"
#include "fixtures/combined.hpp"
#include "fixtures/kvdim.hpp"
#include "seed_fixtures/all.hpp"

NoHeapAttentionResult run_attention_without_heap() noexcept {
  using F = emha::fixtures::combined;
  static float out[F::batch * F::seq_q * F::d_model];
  static float weights[F::batch * F::heads * F::seq_q * F::seq_kv];
  static const std::size_t lengths[F::batch] = {F::seq_kv, F::seq_kv - 1};

  emha::MultiHeadAttention<emha::test::FixtureConfig<F>> mha;  // constructed under the gate
  bool ok = mha.set_weights(emha::test::fixture_weights<F>()) == emha::Status::ok;
  emha::ForwardOptions opt;
  opt.masks = emha::test::fixture_masks<F>();
  opt.masks.key_lengths = lengths;
  opt.attn_weights = weights;
  opt.average_attn_weights = false;
  const auto q = emha::test::span_of(F::query);
  const emha::Status s1 = mha.forward(emha::test::fixture_shape<F>(), q, q, q, out, opt);
  ok = ok && s1 == emha::Status::ok;
  opt.attn_weights = {};  // unfused-or-fused choice without weights
  ok = ok && mha.forward(emha::test::fixture_shape<F>(), q, q, q, out, opt) == emha::Status::ok;
  return {ok};
}

namespace {
struct Threaded : emha::MhaConfig<256, 8, 128> {
  static constexpr std::size_t max_threads = 2;
};
constexpr std::size_t D = 256, S = 128, H = 8;
float g_in_w[3 * D * D], g_in_b[3 * D], g_out_w[D * D], g_out_b[D], g_x[S * D], g_y[S * D];
float g_weights[H * S * S];
emha::MultiHeadAttention<Threaded> g_threaded;  // 1.7 MB: static, not on the stack
}  // namespace

NoHeapAttentionResult run_threaded_attention_without_heap() noexcept {
  for (std::size_t i = 0; i < sizeof g_in_w / sizeof *g_in_w; ++i) g_in_w[i] = float(i % 13) * 0.004f - 0.02f;
  for (std::size_t i = 0; i < sizeof g_out_w / sizeof *g_out_w; ++i) g_out_w[i] = float(i % 11) * 0.004f - 0.02f;
  for (std::size_t i = 0; i < sizeof g_x / sizeof *g_x; ++i) g_x[i] = float(i % 17) * 0.1f - 0.8f;
  emha::MhaWeights w;
  w.in_proj_weight = g_in_w;
  w.in_proj_bias = g_in_b;
  w.out_proj_weight = g_out_w;
  w.out_proj_bias = g_out_b;
  bool ok = g_threaded.set_weights(w) == emha::Status::ok;
  emha::ForwardOptions opt;
  opt.masks.causal = true;
  const emha::AttentionShape shape{S, S, 1, emha::Layout::batch_first};
  ok = ok && g_threaded.forward(shape, g_x, g_x, g_x, g_y, opt) == emha::Status::ok;
  opt.attn_weights = g_weights;
  opt.average_attn_weights = false;
  ok = ok && g_threaded.forward(shape, g_x, g_x, g_x, g_y, opt) == emha::Status::ok;
  return {ok};
}

namespace {
// One seed fixture's layer: constructed (its position tables filled), weights set, forward fused
// and with per-head attention weights.
template <class F>
bool run_seed_layer() noexcept {
  static float out[F::batch * F::seq_q * F::d_model];
  static float weights[F::batch * F::heads * F::seq_q * F::seq_kv];
  emha::MultiHeadAttention<emha::test::SeedConfig<F>> mha;
  bool ok = mha.set_weights(emha::test::seed_weights<F>()) == emha::Status::ok;
  emha::ForwardOptions opt = emha::test::seed_options<F>();
  const auto q = emha::test::span_of(F::query);
  const auto k = F::self_attention ? q : emha::test::span_of(F::key);
  const auto v = F::self_attention ? q : emha::test::span_of(F::value);
  const auto shape = emha::test::fixture_shape<F>();
  ok = ok && mha.forward(shape, q, k, v, out, opt) == emha::Status::ok;
  opt.attn_weights = weights;
  opt.average_attn_weights = false;
  return ok && mha.forward(shape, q, k, v, out, opt) == emha::Status::ok;
}
}  // namespace

NoHeapAttentionResult run_seed_layers_without_heap() noexcept {
  namespace sf = emha::seed_fixtures;
  return {run_seed_layer<sf::blog_encoder>() && run_seed_layer<sf::torchscale_xpos_subln>() &&
          run_seed_layer<sf::labml_bias_cross>() && run_seed_layer<sf::rope_interleaved_partial>() &&
          run_seed_layer<sf::alibi_h6>() && run_seed_layer<sf::pre_ln_rms>() &&
          run_seed_layer<sf::post_ln_noaffine>()};
}

namespace {
// GQA with RoPE decoding through a KvCache: a prefill, decode steps, a truncate and a
// re-decode, with and without attention weights.
template <class F>
bool run_cache_layer() noexcept {
  using C = emha::test::SeedConfig<F>;
  static float out[F::batch * F::seq_q * F::d_model];
  static float weights[F::batch * F::heads * F::seq_q * F::seq_kv];
  emha::MultiHeadAttention<C> mha;
  emha::KvCache<C> cache;
  bool ok = mha.set_weights(emha::test::seed_weights<F>()) == emha::Status::ok;
  emha::ForwardOptions opt;
  opt.masks.causal = true;
  const auto x = emha::test::span_of(F::query);  // only the first rows are read
  constexpr std::size_t n = F::seq_q - 2;
  ok = ok && mha.forward({n, n, F::batch, emha::Layout::batch_first}, x, out, cache, opt) == emha::Status::ok;
  for (std::size_t b = 0; b < F::batch; ++b) ok = ok && cache.truncate(b, n - 1) == emha::Status::ok;
  ok = ok && mha.forward({1, n, F::batch, emha::Layout::batch_first}, x, out, cache, opt) == emha::Status::ok;
  opt.attn_weights = {weights, F::batch * F::seq_q * (n + 1)};
  ok = ok && mha.forward({1, n + 1, F::batch, emha::Layout::batch_first}, x, out, cache, opt) == emha::Status::ok;
  cache.reset();
  return ok && cache.length(0) == 0;
}

// A sliding window's rolling cache of W positions, which rolls at every step once full: every
// token decoded one at a time, a rejected token truncated and decoded again.
template <class F>
bool run_rolling_cache_layer() noexcept {
  using C = emha::test::SeedConfig<F>;
  static float out[F::batch * F::d_model];
  emha::MultiHeadAttention<C> mha;
  emha::KvCache<C, F::sliding_window> cache;
  bool ok = mha.set_weights(emha::test::seed_weights<F>()) == emha::Status::ok;
  emha::ForwardOptions opt;
  opt.masks.causal = true;
  const auto x = emha::test::span_of(F::query);  // only the first rows are read
  bool rejected = false;
  for (std::size_t t = 0; ok && t < F::seq_q; ++t) {
    const emha::AttentionShape shape{1, cache.keys(1, F::batch), F::batch, emha::Layout::batch_first};
    ok = ok && mha.forward(shape, x, out, cache, opt) == emha::Status::ok;
    if (t == F::seq_q / 2 && !rejected) {  // once: the token is rejected and decoded again
      ok = ok && cache.truncate(0, cache.length(0) - 1) == emha::Status::ok;
      ok = ok && cache.truncate(1, cache.length(1) - 1) == emha::Status::ok;
      rejected = true;
      --t;
    }
  }
  ok = ok && cache.first_key(0) > 0 && cache.length(0) == F::seq_q;
  cache.reset();
  return ok && cache.length(0) == 0;
}

// Cross-attention over static K/V: the encoder's K/V projected once, queries one at a time.
template <class F>
bool run_static_kv_layer() noexcept {
  using C = emha::test::FixtureConfig<F>;
  static float out[F::batch * F::d_model];
  emha::MultiHeadAttention<C> mha;
  emha::KvCache<C, F::seq_kv, F::batch> cache;
  bool ok = mha.set_weights(emha::test::fixture_weights<F>()) == emha::Status::ok;
  ok = ok && mha.project_kv(emha::test::fixture_shape<F>(), emha::test::span_of(F::key), emha::test::span_of(F::value),
                            cache) == emha::Status::ok;
  const auto q = emha::test::span_of(F::query);  // only the first rows are read
  for (std::size_t t = 0; t < F::seq_q; ++t)
    ok = ok && mha.forward_static_kv({1, F::seq_kv, F::batch, emha::Layout::batch_first}, q, out, cache) ==
                   emha::Status::ok;
  return ok;
}
}  // namespace

NoHeapAttentionResult run_cache_without_heap() noexcept {
  return {run_cache_layer<emha::seed_fixtures::gqa_rope>() && run_cache_layer<emha::seed_fixtures::mqa_alibi>() &&
          run_rolling_cache_layer<emha::seed_fixtures::window_gqa_rope>() &&
          run_static_kv_layer<emha::fixtures::kvdim>()};
}

namespace {
template <bool Prepack>
struct Int8Layer : emha::MhaConfig<64, 4, 16, 16> {
  static constexpr std::size_t kv_heads = 2;
  static constexpr bool prepack_weights = Prepack;
  static constexpr emha::WeightType weight_type = emha::WeightType::int8;
  static constexpr emha::KvType kv_cache_type = emha::KvType::int8;
};
constexpr std::size_t d8 = 64, rows8 = 64 + 2 * 32, s8 = 16;
float g_w8_in[rows8 * d8], g_w8_out[d8 * d8], g_s8_in[rows8], g_s8_out[d8], g_x8[s8 * d8], g_y8[s8 * d8];
float g_p8[4 * s8 * s8], g_b8_in[rows8], g_b8_out[d8];
std::int8_t g_q8_in[rows8 * d8], g_q8_out[d8 * d8];

template <bool Prepack>
bool run_int8_layer() noexcept {
  using C = Int8Layer<Prepack>;
  emha::MultiHeadAttention<C> mha;
  emha::KvCache<C> cache;
  emha::MhaWeights w;
  w.in_proj_weight_int8 = g_q8_in;
  w.in_proj_weight_scale = g_s8_in;
  w.out_proj_weight_int8 = g_q8_out;
  w.out_proj_weight_scale = g_s8_out;
  w.in_proj_bias = g_b8_in;  // biases stay float
  w.out_proj_bias = g_b8_out;
  bool ok = mha.set_weights(w) == emha::Status::ok;
  emha::ForwardOptions opt;
  opt.masks.causal = true;
  constexpr std::size_t n = s8 - 2;
  ok = ok && mha.forward({n, n, 1}, {g_x8, n * d8}, {g_y8, n * d8}, cache, opt) == emha::Status::ok;
  ok = ok && mha.forward({1, n + 1, 1}, {g_x8, d8}, {g_y8, d8}, cache, opt) == emha::Status::ok;
  opt.attn_weights = {g_p8, 4 * (n + 2)};
  opt.average_attn_weights = false;
  ok = ok && mha.forward({1, n + 2, 1}, {g_x8, d8}, {g_y8, d8}, cache, opt) == emha::Status::ok;
  opt.attn_weights = {};
  return ok && mha.forward({s8, s8, 1}, g_x8, g_x8, g_x8, g_y8, opt) == emha::Status::ok;
}
}  // namespace

NoHeapAttentionResult run_int8_without_heap() noexcept {
  for (std::size_t i = 0; i < rows8 * d8; ++i) g_w8_in[i] = float(i % 13) * 0.004f - 0.02f;
  for (std::size_t i = 0; i < d8 * d8; ++i) g_w8_out[i] = float(i % 11) * 0.004f - 0.02f;
  for (std::size_t i = 0; i < s8 * d8; ++i) g_x8[i] = float(i % 17) * 0.1f - 0.8f;
  emha::quantize_rows_s8(rows8, d8, g_w8_in, d8, g_q8_in, d8, g_s8_in);
  emha::quantize_rows_s8(d8, d8, g_w8_out, d8, g_q8_out, d8, g_s8_out);
  return {run_int8_layer<true>() && run_int8_layer<false>()};
}

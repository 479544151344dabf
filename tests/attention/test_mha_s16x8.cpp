// SPDX-License-Identifier: Apache-2.0
// The 16x8 layer (Arithmetic::s16x8, emha/attention/mha_s16x8.hpp) on the host and the firmware:
// every output value and every probability of forward() and forward_reference() equals what
// TFLite's reference 16x8 kernels compute, re-implemented in Python
// (tests/attention/gen_s16x8_fixtures.py, fixtures/s16x8_layer.hpp): the s8 layer's cases
// (self-attention over a batch; GQA with head_dim != d_model / heads in the [S, B, d] layout, a
// causal mask, padded keys and single rounding; cross-attention with kdim, vdim != d_model, no
// bias, a per-head mask and a fully masked row) and MQA over 96 keys. Each case prints its error
// against the float64 module on the float input, beside that of torch's fake quantization of the
// same graph. Bad input leaves the outputs untouched.

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "attention/fixtures/s16x8_layer.hpp"
#include "emha/attention/mha_s16x8.hpp"
#include "emha/emha.hpp"
#include "support/unit.hpp"

namespace {

namespace fx = s16x8_fixtures;

template <class F>
struct S16x8Config : emha::MhaConfig<F::d, F::heads, F::sq, F::skv> {
  static constexpr std::size_t kv_heads = F::kv_heads, head_dim = F::head_dim, kdim = F::kdim, vdim = F::vdim;
  static constexpr std::size_t max_batch = F::batch;
  static constexpr emha::Arithmetic arithmetic = emha::Arithmetic::s16x8;
  static constexpr emha::Rounding rounding =
      F::single_rounding ? emha::Rounding::single_rounding : emha::Rounding::double_rounding;
};

#define EMHA_S16X8_CASE(ns)                                                                                   \
  struct ns##_case {                                                                                          \
    static constexpr std::size_t d = fx::ns::d, heads = fx::ns::heads, kv_heads = fx::ns::kv_heads,           \
                                 head_dim = fx::ns::head_dim, kdim = fx::ns::kdim, vdim = fx::ns::vdim,       \
                                 sq = fx::ns::sq, skv = fx::ns::skv, batch = fx::ns::batch;                   \
    static constexpr bool single_rounding = fx::ns::single_rounding, seq_first = fx::ns::seq_first;           \
    static constexpr const std::int16_t *query = fx::ns::query, *key = fx::ns::key, *value = fx::ns::value,   \
                                        *out = fx::ns::expected_out, *probs = fx::ns::expected_probs;         \
    static constexpr const double* truth = fx::ns::truth;                                                     \
    static constexpr double out_scale = fx::ns::out_scale, torch_error = fx::ns::torch_fake_quant_error;      \
  };
EMHA_S16X8_CASE(self_mha)
EMHA_S16X8_CASE(gqa_causal_padding)
EMHA_S16X8_CASE(cross_masked)
EMHA_S16X8_CASE(long_rows)

constexpr std::size_t max_out = 2 * 9 * 32, max_probs = 2 * 4 * 9 * 11 + 2 * 4 * 96;
std::int16_t g_out[max_out], g_probs[max_probs];

// Every value of out and the probabilities, on one path; returns the mismatches.
template <class F, class Layer>
std::size_t mismatches(Layer& layer, bool reference, const emha::AttentionShape& shape,
                       const emha::ForwardOptionsS16x8& options_in) {
  constexpr std::size_t n_out = F::batch * F::sq * F::d, n_probs = F::batch * F::heads * F::sq * F::skv;
  for (std::int16_t& v : g_out) v = 99;
  for (std::int16_t& v : g_probs) v = 99;
  emha::ForwardOptionsS16x8 options = options_in;
  options.attn_weights = {g_probs, n_probs};
  const emha::Span<const std::int16_t> q{F::query, n_out}, k{F::key, F::batch * F::skv * F::kdim},
      v{F::value, F::batch * F::skv * F::vdim};
  const emha::Status s = reference ? layer.forward_reference(shape, q, k, v, {g_out, n_out}, options)
                                   : layer.forward(shape, q, k, v, {g_out, n_out}, options);
  EMHA_CHECK(s == emha::Status::ok);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n_out; ++i) bad += g_out[i] != F::out[i];
  for (std::size_t i = 0; i < n_probs; ++i) bad += g_probs[i] != F::probs[i];
  for (std::size_t i = n_out; i < max_out; ++i) bad += g_out[i] != 99;
  return bad;
}

template <class F>
void run_case(const char* name, const emha::MhaS16x8Weights& w, const emha::ForwardOptionsS16x8& options) {
  using Layer = emha::MultiHeadAttention<S16x8Config<F>>;
  static Layer layer;
  EMHA_INFO("case " << name);
  EMHA_CHECK(layer.set_weights(w) == emha::Status::ok);
  const emha::AttentionShape shape{F::sq, F::skv, F::batch,
                                   F::seq_first ? emha::Layout::seq_first : emha::Layout::batch_first};
  EMHA_CHECK(mismatches<F>(layer, false, shape, options) == 0);
  EMHA_CHECK(mismatches<F>(layer, true, shape, options) == 0);
  constexpr std::size_t n_out = F::batch * F::sq * F::d;
  double worst = 0, err2 = 0, truth2 = 0;
  for (std::size_t i = 0; i < n_out; ++i) {
    const double err = std::fabs(double(F::out[i]) * F::out_scale - F::truth[i]);
    worst = err > worst ? err : worst;
    err2 += err * err;
    truth2 += F::truth[i] * F::truth[i];
  }
  EMHA_MESSAGE("16x8 layer " << name << ": max |16x8 - float64 module| " << worst << ", rms "
                             << 100.0 * std::sqrt(err2 / truth2) << "% of the output's (output step "
                             << F::out_scale << "); torch fake-quant max " << F::torch_error);
  // Bad input: an additive (float) mask, and an output one value short; nothing written.
  for (std::int16_t& v : g_out) v = 99;
  emha::ForwardOptionsS16x8 additive = options;
  const float zeros[1] = {0.0f};
  additive.masks.attn_additive = {zeros, 1};
  const emha::Span<const std::int16_t> q{F::query, n_out}, k{F::key, F::batch * F::skv * F::kdim},
      v{F::value, F::batch * F::skv * F::vdim};
  EMHA_CHECK(layer.forward(shape, q, k, v, {g_out, n_out}, additive) == emha::Status::invalid_argument);
  EMHA_CHECK(layer.forward(shape, q, k, v, {g_out, n_out - 1}, options) == emha::Status::size_mismatch);
  std::size_t written = 0;
  for (std::int16_t x : g_out) written += x != 99;
  EMHA_CHECK(written == 0);
}

}  // namespace

EMHA_TEST_CASE("16x8 layer: every value equals TFLite's reference 16x8 kernels") {
  run_case<self_mha_case>("self_mha", fx::self_mha::weights(), {});
  emha::ForwardOptionsS16x8 causal;
  causal.masks.causal = true;
  causal.masks.key_ignored = {fx::gqa_causal_padding::key_ignored, sizeof fx::gqa_causal_padding::key_ignored};
  run_case<gqa_causal_padding_case>("gqa_causal_padding", fx::gqa_causal_padding::weights(), causal);
  emha::ForwardOptionsS16x8 per_head;
  per_head.masks.attn_masked = {fx::cross_masked::attn_masked, sizeof fx::cross_masked::attn_masked};
  per_head.masks.attn_mask_shape = emha::MaskShape::per_head;
  run_case<cross_masked_case>("cross_masked", fx::cross_masked::weights(), per_head);
  run_case<long_rows_case>("long_rows", fx::long_rows::weights(), {});
}

EMHA_TEST_CASE("16x8 layer: set_weights refuses what TFLite's 16x8 cannot hold") {
  using Layer = emha::MultiHeadAttention<S16x8Config<self_mha_case>>;
  static Layer layer;
  static std::int8_t weight[sizeof fx::self_mha::q_weight];
  static std::int64_t bias[sizeof fx::self_mha::k_bias / sizeof(std::int64_t)];
  for (std::size_t i = 0; i < sizeof weight; ++i) weight[i] = fx::self_mha::q_weight[i];
  for (std::size_t i = 0; i < sizeof bias / sizeof bias[0]; ++i) bias[i] = fx::self_mha::k_bias[i];
  emha::MhaS16x8Weights w = fx::self_mha::weights();
  EMHA_CHECK(layer.set_weights(w) == emha::Status::ok);
  w.q.weight = {weight, sizeof weight};
  weight[5] = INT8_MIN;  // symmetric weights are [-127, 127]
  EMHA_CHECK(layer.set_weights(w) == emha::Status::invalid_argument);
  weight[5] = 0;
  w.k.bias = {bias, 3};
  EMHA_CHECK(layer.set_weights(w) == emha::Status::size_mismatch);
  w.k.bias = {bias, sizeof bias / sizeof bias[0]};
  bias[2] = std::int64_t(1) << 46;  // with the sums, past TFLite's |x| < 2^47
  EMHA_CHECK(layer.set_weights(w) == emha::Status::invalid_argument);
  bias[2] = 0;
  EMHA_CHECK(layer.set_weights(w) == emha::Status::ok);
  w.scores.shift = 8;  // TFLite's int64 requantization takes shifts up to 7
  EMHA_CHECK(layer.set_weights(w) == emha::Status::invalid_argument);
  w = fx::self_mha::weights();
  w.softmax.input.multiplier = 12345;  // below 2^30: not a Q31 multiplier in [0.5, 1)
  EMHA_CHECK(layer.set_weights(w) == emha::Status::invalid_argument);
}

namespace {
using CallerLayer = emha::MultiHeadAttention<S16x8Config<self_mha_case>, emha::ArenaOwnership::caller>;
alignas(64) unsigned char g_arena[CallerLayer::arena_bytes + 64];
}  // namespace

EMHA_TEST_CASE("16x8 layer: an input inside the caller's arena is refused, nothing written") {
  // The pass writes its arena while it reads the inputs: a query there would be overwritten.
  static CallerLayer layer(emha::ArenaRef(g_arena, sizeof g_arena));
  EMHA_CHECK(layer.set_weights(fx::self_mha::weights()) == emha::Status::ok);
  constexpr std::size_t n = self_mha_case::batch * self_mha_case::sq * self_mha_case::d;
  auto* inside = reinterpret_cast<std::int16_t*>(g_arena + 128);
  for (std::size_t i = 0; i < n; ++i) inside[i] = fx::self_mha::query[i];
  for (std::int16_t& v : g_out) v = 99;
  const emha::AttentionShape shape{self_mha_case::sq, self_mha_case::skv, self_mha_case::batch};
  const emha::Span<const std::int16_t> q{inside, n}, x{fx::self_mha::query, n};
  EMHA_CHECK(layer.forward(shape, q, x, x, {g_out, n}) == emha::Status::overlap);
  EMHA_CHECK(layer.forward(shape, x, x, q, {g_out, n}) == emha::Status::overlap);
  std::size_t written = 0;
  for (std::int16_t v : g_out) written += v != 99;
  EMHA_CHECK(written == 0);
  EMHA_CHECK(layer.forward(shape, x, x, x, {g_out, n}) == emha::Status::ok);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) bad += g_out[i] != fx::self_mha::expected_out[i];
  EMHA_CHECK(bad == 0);
}

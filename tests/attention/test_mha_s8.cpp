// SPDX-License-Identifier: Apache-2.0
// The full-integer layer (Arithmetic::s8, emha/attention/mha_s8.hpp) on the host and the firmware:
// every output byte and every probability byte of forward() and forward_reference() equals what
// TFLite's reference int8 kernels compute, re-implemented in Python
// (tests/attention/gen_s8_fixtures.py, fixtures/s8_layer.hpp): self-attention over a batch,
// GQA with head_dim != d_model / heads in the [S, B, d] layout with a causal mask, padded keys and
// single rounding, and cross-attention (kdim, vdim != d_model, no bias) under a per-head mask with
// a fully masked row. Each case prints its error against the float64 module on the float input,
// beside the error of torch's fake quantization of the same graph (the generator's).
// Bad input leaves the outputs untouched.

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "attention/fixtures/s8_layer.hpp"
#include "emha/attention/mha_s8.hpp"
#include "emha/emha.hpp"
#include "support/unit.hpp"

namespace {

template <class F>
struct S8Config : emha::MhaConfig<F::d, F::heads, F::sq, F::skv> {
  static constexpr std::size_t kv_heads = F::kv_heads, head_dim = F::head_dim, kdim = F::kdim, vdim = F::vdim;
  static constexpr std::size_t max_batch = F::batch;
  static constexpr emha::Arithmetic arithmetic = emha::Arithmetic::s8;
  static constexpr emha::Rounding rounding =
      F::single_rounding ? emha::Rounding::single_rounding : emha::Rounding::double_rounding;
};

#define EMHA_S8_CASE(ns)                                                                                      \
  struct ns##_case {                                                                                          \
    static constexpr std::size_t d = s8_fixtures::ns::d, heads = s8_fixtures::ns::heads,                      \
                                 kv_heads = s8_fixtures::ns::kv_heads, head_dim = s8_fixtures::ns::head_dim,  \
                                 kdim = s8_fixtures::ns::kdim, vdim = s8_fixtures::ns::vdim,                  \
                                 sq = s8_fixtures::ns::sq, skv = s8_fixtures::ns::skv,                        \
                                 batch = s8_fixtures::ns::batch;                                              \
    static constexpr bool single_rounding = s8_fixtures::ns::single_rounding;                                 \
  };
EMHA_S8_CASE(self_mha)
EMHA_S8_CASE(gqa_causal_padding)
EMHA_S8_CASE(cross_masked)

constexpr std::size_t max_out = 2 * 9 * 32, max_probs = 2 * 4 * 9 * 11;
std::int8_t g_out[max_out], g_probs[max_probs];

struct Expected {
  const std::int8_t *query, *key, *value, *out, *probs;
  const double* truth;
  double out_scale;
  std::int32_t out_zero_point;
  double torch_fake_quant_error;  // the same graph fake-quantized by torch (the generator's)
};

// Every byte of out and the probabilities, on one path; returns the mismatches.
template <class Layer>
std::size_t mismatches(Layer& layer, bool reference, const emha::AttentionShape& shape, const Expected& e,
                       const emha::ForwardOptionsS8& options_in, std::size_t n_out, std::size_t n_probs) {
  for (std::size_t i = 0; i < max_out; ++i) g_out[i] = 99;
  for (std::size_t i = 0; i < max_probs; ++i) g_probs[i] = 99;
  emha::ForwardOptionsS8 options = options_in;
  options.attn_weights = {g_probs, n_probs};
  const emha::Span<const std::int8_t> q{e.query, n_out}, k{e.key, shape.batch * shape.seq_kv * Layer::dims.kdim},
      v{e.value, shape.batch * shape.seq_kv * Layer::dims.vdim};
  const emha::Status s = reference ? layer.forward_reference(shape, q, k, v, {g_out, n_out}, options)
                                   : layer.forward(shape, q, k, v, {g_out, n_out}, options);
  EMHA_CHECK(s == emha::Status::ok);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n_out; ++i) bad += g_out[i] != e.out[i];
  for (std::size_t i = 0; i < n_probs; ++i) bad += g_probs[i] != e.probs[i];
  for (std::size_t i = n_out; i < max_out; ++i) bad += g_out[i] != 99;
  return bad;
}

template <class F, class Expect>
void run_case(const char* name, const emha::MhaS8Weights& w, const emha::ForwardOptionsS8& options,
              const Expect& e, bool seq_first) {
  using Layer = emha::MultiHeadAttention<S8Config<F>>;
  static Layer layer;
  EMHA_INFO("case " << name);
  EMHA_CHECK(layer.set_weights(w) == emha::Status::ok);
  emha::AttentionShape shape{F::sq, F::skv, F::batch,
                             seq_first ? emha::Layout::seq_first : emha::Layout::batch_first};
  const std::size_t n_out = F::batch * F::sq * F::d, n_probs = F::batch * F::heads * F::sq * F::skv;
  EMHA_CHECK(mismatches(layer, false, shape, e, options, n_out, n_probs) == 0);
  EMHA_CHECK(mismatches(layer, true, shape, e, options, n_out, n_probs) == 0);
  double worst = 0, sum = 0;
  for (std::size_t i = 0; i < n_out; ++i) {
    const double err = std::fabs((double(e.out[i]) - e.out_zero_point) * e.out_scale - e.truth[i]);
    worst = err > worst ? err : worst;
    sum += err;
  }
  EMHA_MESSAGE("s8 layer " << name << ": max |int8 - float64 module| " << worst << ", mean " << sum / double(n_out)
                           << " (output step " << e.out_scale << "); torch fake-quant max "
                           << e.torch_fake_quant_error);
  // Bad input: an additive (float) mask, and an output one byte short; nothing written.
  for (std::size_t i = 0; i < max_out; ++i) g_out[i] = 99;
  emha::ForwardOptionsS8 additive = options;
  const float zeros[1] = {0.0f};
  additive.masks.attn_additive = {zeros, 1};
  const emha::Span<const std::int8_t> q{e.query, n_out}, k{e.key, F::batch * F::skv * F::kdim},
      v{e.value, F::batch * F::skv * F::vdim};
  EMHA_CHECK(layer.forward(shape, q, k, v, {g_out, n_out}, additive) == emha::Status::invalid_argument);
  EMHA_CHECK(layer.forward(shape, q, k, v, {g_out, n_out - 1}, options) == emha::Status::size_mismatch);
  std::size_t written = 0;
  for (std::size_t i = 0; i < max_out; ++i) written += g_out[i] != 99;
  EMHA_CHECK(written == 0);
}

#define EMHA_S8_EXPECTED(ns)                                                                                    \
  Expected {                                                                                                    \
    s8_fixtures::ns::query, s8_fixtures::ns::key, s8_fixtures::ns::value, s8_fixtures::ns::expected_out,        \
        s8_fixtures::ns::expected_probs, s8_fixtures::ns::truth, s8_fixtures::ns::out_scale,                    \
        s8_fixtures::ns::zero_point_out, s8_fixtures::ns::torch_fake_quant_error                                \
  }

}  // namespace

EMHA_TEST_CASE("s8 layer: every byte equals TFLite's reference int8 kernels") {
  run_case<self_mha_case>("self_mha", s8_fixtures::self_mha::weights(), {}, EMHA_S8_EXPECTED(self_mha), s8_fixtures::self_mha::seq_first);
  emha::ForwardOptionsS8 causal;
  causal.masks.causal = true;
  causal.masks.key_ignored = {s8_fixtures::gqa_causal_padding::key_ignored,
                              sizeof s8_fixtures::gqa_causal_padding::key_ignored};
  run_case<gqa_causal_padding_case>("gqa_causal_padding", s8_fixtures::gqa_causal_padding::weights(), causal,
                                    EMHA_S8_EXPECTED(gqa_causal_padding), s8_fixtures::gqa_causal_padding::seq_first);
  emha::ForwardOptionsS8 per_head;
  per_head.masks.attn_masked = {s8_fixtures::cross_masked::attn_masked, sizeof s8_fixtures::cross_masked::attn_masked};
  per_head.masks.attn_mask_shape = emha::MaskShape::per_head;
  run_case<cross_masked_case>("cross_masked", s8_fixtures::cross_masked::weights(), per_head, EMHA_S8_EXPECTED(cross_masked),
                              s8_fixtures::cross_masked::seq_first);
}

EMHA_TEST_CASE("s8 layer: set_weights refuses what TFLite's int8 cannot hold") {
  using Layer = emha::MultiHeadAttention<S8Config<self_mha_case>>;
  static Layer layer;
  static std::int8_t weight[sizeof s8_fixtures::self_mha::q_weight];
  for (std::size_t i = 0; i < sizeof weight; ++i) weight[i] = s8_fixtures::self_mha::q_weight[i];
  emha::MhaS8Weights w = s8_fixtures::self_mha::weights();
  EMHA_CHECK(layer.set_weights(w) == emha::Status::ok);
  w.q.weight = {weight, sizeof weight};
  weight[5] = INT8_MIN;  // symmetric weights are [-127, 127]
  EMHA_CHECK(layer.set_weights(w) == emha::Status::invalid_argument);
  weight[5] = 0;
  w.zero_point_scores = 128;
  EMHA_CHECK(layer.set_weights(w) == emha::Status::invalid_argument);
  w = s8_fixtures::self_mha::weights();
  w.k.bias = {s8_fixtures::self_mha::k_bias, 3};
  EMHA_CHECK(layer.set_weights(w) == emha::Status::size_mismatch);
  w = s8_fixtures::self_mha::weights();
  w.context.multiplier = 12345;  // below 2^30: not a Q31 multiplier in [0.5, 1)
  EMHA_CHECK(layer.set_weights(w) == emha::Status::invalid_argument);
}

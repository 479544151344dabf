// SPDX-License-Identifier: Apache-2.0
// The exporter's 16x8 path (emha_export.py --quantize 16x8 --calibration FILE,
// tests/export/gen_s16x8_export.py): every integer of the header's weights() equals what TFLite's
// post-training 16x8 quantization computes for the same module and calibration (written
// independently by the generator: weights, int64 biases, (M0, shift) per row, the scores',
// softmax's and context's parameters), and the layer built from the header gives TFLite's
// reference 16x8 kernels' output, value for value: nn.MultiheadAttention with double rounding,
// and a GQA proj-family module, causal, with single rounding.

#include <cstddef>
#include <cstdint>

#include "emha/emha.hpp"
#include "export/fixtures/s16x8_nn_mha.hpp"
#include "export/fixtures/s16x8_nn_mha_expected.hpp"
#include "export/fixtures/s16x8_proj_gqa.hpp"
#include "export/fixtures/s16x8_proj_gqa_expected.hpp"
#include "support/unit.hpp"

namespace {

bool same(std::int64_t a, std::int64_t b) { return a == b; }
bool same(const emha::QuantizedMultiplier& a, const emha::QuantizedMultiplier& b) {
  return a.multiplier == b.multiplier && a.shift == b.shift;
}

template <class T, class U, std::size_t N>
std::size_t differing(emha::Span<const T> got, const U (&want)[N]) {
  if (got.size != N) return N + 1;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < N; ++i) bad += !same(got.data[i], want[i]);
  return bad;
}

// The header's weights() against the generator's quantization; ns is the case's namespace.
#define EMHA_S16X8_PARAM_MISMATCHES(w, ns)                                                                          \
  (differing(w.q.weight, ns::q_weight) + differing(w.q.bias, ns::q_bias) +                                          \
   differing(w.q.multiplier, ns::q_multiplier) + differing(w.k.weight, ns::k_weight) +                              \
   differing(w.k.bias, ns::k_bias) + differing(w.k.multiplier, ns::k_multiplier) +                                  \
   differing(w.v.weight, ns::v_weight) + differing(w.v.bias, ns::v_bias) +                                          \
   differing(w.v.multiplier, ns::v_multiplier) + differing(w.out.weight, ns::out_weight) +                          \
   differing(w.out.bias, ns::out_bias) + differing(w.out.multiplier, ns::out_multiplier) +                          \
   !same(w.scores, ns::scores) + !same(w.context, ns::context) + !same(w.softmax.input, ns::softmax))

std::int16_t g_out[2 * 8 * 32];

// The exported layer on the generator's input: its values against TFLite's.
template <class Config, std::size_t N>
std::size_t output_mismatches(const emha::MhaS16x8Weights& w, const std::int16_t (&input)[N],
                              const std::int16_t (&want)[N], std::size_t batch, std::size_t seq, bool causal) {
  static emha::MultiHeadAttention<Config> layer;
  EMHA_CHECK(layer.set_weights(w) == emha::Status::ok);
  for (std::int16_t& v : g_out) v = 99;
  emha::ForwardOptionsS16x8 options;
  options.masks.causal = causal;
  const emha::Span<const std::int16_t> x{input, N};
  EMHA_CHECK(layer.forward({seq, seq, batch, emha::Layout::batch_first}, x, x, x, {g_out, N}, options) ==
             emha::Status::ok);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < N; ++i) bad += g_out[i] != want[i];
  return bad;
}

}  // namespace

EMHA_TEST_CASE("16x8 export: the exporter's integers are TFLite's, and so is the layer's output") {
  namespace a = s16x8_export::nn_mha;
  namespace b = s16x8_export::proj_gqa;
  static_assert(sizeof g_out == sizeof a::expected::out && sizeof g_out == sizeof b::expected::out);
  const emha::MhaS16x8Weights wa = a::weights(), wb = b::weights();
  EMHA_CHECK(EMHA_S16X8_PARAM_MISMATCHES(wa, a::expected) == 0);
  EMHA_CHECK(EMHA_S16X8_PARAM_MISMATCHES(wb, b::expected) == 0);
  EMHA_CHECK(double(a::input_scale) == a::expected::input_scale);
  EMHA_CHECK(double(a::output_scale) == a::expected::output_scale);
  EMHA_CHECK(output_mismatches<a::Config>(wa, a::expected::input, a::expected::out, a::expected::batch,
                                          a::expected::seq, a::expected::causal) == 0);
  EMHA_CHECK(output_mismatches<b::Config>(wb, b::expected::input, b::expected::out, b::expected::batch,
                                          b::expected::seq, b::expected::causal) == 0);
}

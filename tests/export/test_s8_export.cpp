// SPDX-License-Identifier: Apache-2.0
// The exporter's full-integer path (emha_export.py --quantize int8 --calibration FILE,
// tests/export/gen_s8_export.py): every integer of the header's weights() equals what TFLite's
// post-training quantization computes for the same module and calibration (written independently
// by the generator: weights, folded biases, (M0, shift) per row, nine zero points, the scores',
// softmax's and context's parameters), and the layer built from the header gives TFLite's
// reference int8 kernels' output, byte for byte: nn.MultiheadAttention with double rounding, and
// a GQA proj-family module, causal, with single rounding. The version 4 blob the exporter wrote
// beside each header loads into the same integers (load_weights<Config>(blob, MhaS8Weights&)), and
// the loader refuses the other layer's blobs, another rounding and a corrupted byte.

#include <cstddef>
#include <cstdint>

#include "emha/emha.hpp"
#include "emha/io/weight_blob.hpp"
#include "export/fixture_bytes.hpp"
#include "export/fixtures/s8_nn_mha.hpp"
#include "export/fixtures/s8_nn_mha_expected.hpp"
#include "export/fixtures/s8_proj_gqa.hpp"
#include "export/fixtures/s8_proj_gqa_expected.hpp"
#include "support/unit.hpp"

namespace {

bool same(std::int32_t a, std::int32_t b) { return a == b; }
bool same(const emha::QuantizedMultiplier& a, const emha::QuantizedMultiplier& b) {
  return a.multiplier == b.multiplier && a.shift == b.shift;
}

template <class T, std::size_t N>
std::size_t differing(emha::Span<const T> got, const T (&want)[N]) {
  if (got.size != N) return N + 1;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < N; ++i) bad += !same(got.data[i], want[i]);
  return bad;
}

// The header's weights() against the generator's TFLite quantization of the same module.
template <class E>
std::size_t param_mismatches(const emha::MhaS8Weights& w) {
  std::size_t bad = 0;
  bad += differing(w.q.weight, E::q_weight) + differing(w.q.bias, E::q_bias) + differing(w.q.multiplier, E::q_multiplier);
  bad += differing(w.k.weight, E::k_weight) + differing(w.k.bias, E::k_bias) + differing(w.k.multiplier, E::k_multiplier);
  bad += differing(w.v.weight, E::v_weight) + differing(w.v.bias, E::v_bias) + differing(w.v.multiplier, E::v_multiplier);
  bad += differing(w.out.weight, E::out_weight) + differing(w.out.bias, E::out_bias) +
         differing(w.out.multiplier, E::out_multiplier);
  bad += w.zero_point_query != E::zero_point_query;
  bad += w.zero_point_key != E::zero_point_query;
  bad += w.zero_point_value != E::zero_point_query;
  bad += w.zero_point_q != E::zero_point_q;
  bad += w.zero_point_k != E::zero_point_k;
  bad += w.zero_point_v != E::zero_point_v;
  bad += w.zero_point_scores != E::zero_point_scores;
  bad += w.zero_point_context != E::zero_point_context;
  bad += w.zero_point_out != E::zero_point_out;
  bad += !same(w.scores, E::scores) + !same(w.context, E::context);
  bad += w.softmax.input_multiplier != E::softmax.input_multiplier;
  bad += w.softmax.input_left_shift != E::softmax.input_left_shift;
  bad += w.softmax.diff_min != E::softmax.diff_min;
  return bad;
}

// The generator's constants as a type (its namespace), for param_mismatches.
#define EMHA_S8_EXPECTED_TYPE(ns)                                                                     \
  struct ns##_expected {                                                                              \
    static constexpr const auto& q_weight = s8_export::ns::expected::q_weight;                        \
    static constexpr const auto& q_bias = s8_export::ns::expected::q_bias;                            \
    static constexpr const auto& q_multiplier = s8_export::ns::expected::q_multiplier;                \
    static constexpr const auto& k_weight = s8_export::ns::expected::k_weight;                        \
    static constexpr const auto& k_bias = s8_export::ns::expected::k_bias;                            \
    static constexpr const auto& k_multiplier = s8_export::ns::expected::k_multiplier;                \
    static constexpr const auto& v_weight = s8_export::ns::expected::v_weight;                        \
    static constexpr const auto& v_bias = s8_export::ns::expected::v_bias;                            \
    static constexpr const auto& v_multiplier = s8_export::ns::expected::v_multiplier;                \
    static constexpr const auto& out_weight = s8_export::ns::expected::out_weight;                    \
    static constexpr const auto& out_bias = s8_export::ns::expected::out_bias;                        \
    static constexpr const auto& out_multiplier = s8_export::ns::expected::out_multiplier;            \
    static constexpr std::int32_t zero_point_query = s8_export::ns::expected::zero_point_query,       \
                                  zero_point_q = s8_export::ns::expected::zero_point_q,               \
                                  zero_point_k = s8_export::ns::expected::zero_point_k,               \
                                  zero_point_v = s8_export::ns::expected::zero_point_v,               \
                                  zero_point_scores = s8_export::ns::expected::zero_point_scores,     \
                                  zero_point_context = s8_export::ns::expected::zero_point_context,   \
                                  zero_point_out = s8_export::ns::expected::zero_point_out;           \
    static constexpr emha::QuantizedMultiplier scores = s8_export::ns::expected::scores,              \
                                               context = s8_export::ns::expected::context;            \
    static constexpr emha::SoftmaxS8Params softmax = s8_export::ns::expected::softmax;                \
  };
EMHA_S8_EXPECTED_TYPE(nn_mha)
EMHA_S8_EXPECTED_TYPE(proj_gqa)

std::int8_t g_out[2 * 8 * 32];

// The exported layer on the generator's input: its bytes against TFLite's.
template <class Config, std::size_t N>
std::size_t output_mismatches(const emha::MhaS8Weights& w, const std::int8_t (&input)[N], const std::int8_t (&want)[N],
                              std::size_t batch, std::size_t seq, bool causal) {
  static emha::MultiHeadAttention<Config> layer;
  EMHA_CHECK(layer.set_weights(w) == emha::Status::ok);
  for (std::int8_t& v : g_out) v = 99;
  emha::ForwardOptionsS8 options;
  options.masks.causal = causal;
  const emha::Span<const std::int8_t> x{input, N};
  EMHA_CHECK(layer.forward({seq, seq, batch, emha::Layout::batch_first}, x, x, x, {g_out, N}, options) ==
             emha::Status::ok);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < N; ++i) bad += g_out[i] != want[i];
  return bad;
}

}  // namespace

EMHA_TEST_CASE("s8 export: the exporter's integers are TFLite's, and so is the layer's output") {
  namespace a = s8_export::nn_mha;
  namespace b = s8_export::proj_gqa;
  static_assert(sizeof g_out == sizeof a::expected::out && sizeof g_out == sizeof b::expected::out);
  EMHA_CHECK(param_mismatches<nn_mha_expected>(a::weights()) == 0);
  EMHA_CHECK(param_mismatches<proj_gqa_expected>(b::weights()) == 0);
  EMHA_CHECK(a::input_zero_point == a::expected::zero_point_query);
  EMHA_CHECK(double(a::output_scale) == a::expected::output_scale);
  EMHA_CHECK(output_mismatches<a::Config>(a::weights(), a::expected::input, a::expected::out, a::expected::batch,
                                          a::expected::seq, a::expected::causal) == 0);
  EMHA_CHECK(output_mismatches<b::Config>(b::weights(), b::expected::input, b::expected::out, b::expected::batch,
                                          b::expected::seq, b::expected::causal) == 0);
}

namespace {


struct OtherRounding : s8_export::nn_mha::Config {
  static constexpr emha::Rounding rounding = emha::Rounding::single_rounding;
};
struct FloatTwin : emha::MhaConfig<32, 4, 8, 8> {};  // nn_mha's dims, float arithmetic

}  // namespace

EMHA_TEST_CASE("s8 export: the version 4 blob holds the header's integers, and only an s8 Config of its dims reads it") {
  namespace a = s8_export::nn_mha;
  namespace b = s8_export::proj_gqa;
  const emha::test::FileBytes blob_a = emha::test::read_fixture("s8_nn_mha.bin"), blob_b = emha::test::read_fixture("s8_proj_gqa.bin");
  emha::MhaS8Weights wa{}, wb{};
  EMHA_CHECK(emha::load_weights<a::Config>(blob_a.span, wa) == emha::Status::ok);
  EMHA_CHECK(emha::load_weights<b::Config>(blob_b.span, wb) == emha::Status::ok);
  EMHA_CHECK(param_mismatches<nn_mha_expected>(wa) == 0);
  EMHA_CHECK(param_mismatches<proj_gqa_expected>(wb) == 0);
  EMHA_CHECK(output_mismatches<a::Config>(wa, a::expected::input, a::expected::out, a::expected::batch,
                                          a::expected::seq, a::expected::causal) == 0);
  EMHA_CHECK(output_mismatches<b::Config>(wb, b::expected::input, b::expected::out, b::expected::batch,
                                          b::expected::seq, b::expected::causal) == 0);
  // Refused, `out` untouched: another Config's dims, another rounding, a float blob, a float
  // Config, a flipped byte.
  emha::MhaS8Weights untouched{};
  EMHA_CHECK(emha::load_weights<b::Config>(blob_a.span, untouched) == emha::Status::config_mismatch);
  EMHA_CHECK(emha::load_weights<OtherRounding>(blob_a.span, untouched) == emha::Status::config_mismatch);
  const emha::test::FileBytes float_blob = emha::test::read_fixture("nn_mha.bin");
  EMHA_CHECK(emha::load_weights<a::Config>(float_blob.span, untouched) == emha::Status::weight_type_mismatch);
  emha::MhaWeights float_weights{};
  EMHA_CHECK(emha::load_weights<FloatTwin>(blob_a.span, float_weights) == emha::Status::weight_type_mismatch);
  emha::test::FileBytes flipped = emha::test::read_fixture("s8_nn_mha.bin");
  const_cast<unsigned char*>(flipped.span.data)[flipped.span.size - 1] ^= 1;
  EMHA_CHECK(emha::load_weights<a::Config>(flipped.span, untouched) == emha::Status::bad_checksum);
  EMHA_CHECK(untouched.q.weight.data == nullptr);
  EMHA_CHECK(untouched.zero_point_out == 0);
  EMHA_CHECK(float_weights.in_proj_weight.data == nullptr);
}

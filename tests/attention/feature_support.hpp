// SPDX-License-Identifier: Apache-2.0
#pragma once
// Reads a generated model-family feature fixture (tests/attention/feature_fixtures/*.hpp, from
// tests/attention/gen_feature_fixtures.py: head_dim, QK-norm, a compile-time scale, T5's relative
// position bias) into emha's API types. The fixture's integer codes are the enumerators' order.

#include <cstddef>
#include <type_traits>

#include "attention/fixture_support.hpp"
#include "emha/emha.hpp"
#include "feature_fixtures/all.hpp"
#include "support/unit.hpp"
#include "w8_fixtures/all.hpp"

namespace emha::test {

// The fixtures a target runs: emha::feature_fixtures::small on the firmware, all on the host; and
// the int8-weight ones (tests/attention/gen_w8_fixtures.py: feature modules quantized per output
// channel, their truth the dequantized module's).
using feature_fixture_list = std::conditional_t<on_firmware, feature_fixtures::small, feature_fixtures::all>;
using w8_fixture_list = std::conditional_t<on_firmware, w8_fixtures::small, w8_fixtures::all>;

// Whether fixture F carries int8 weights (F::int8_weights).
template <class F, class = void>
struct has_int8_weights : std::false_type {};
template <class F>
struct has_int8_weights<F, std::void_t<decltype(F::int8_weights)>> : std::bool_constant<F::int8_weights> {};

template <class F, bool Prepack = true, std::size_t Threads = 1>
struct FeatureConfig : MhaConfig<F::d_model, F::heads, F::seq_q, F::seq_kv> {
  static constexpr std::size_t head_dim = F::head_dim;
  static constexpr std::size_t kv_heads = F::kv_heads;
  static constexpr std::size_t max_batch = F::batch;
  static constexpr std::size_t max_threads = Threads;
  static constexpr bool prepack_weights = Prepack;
  static constexpr bool bias = F::bias;
  static constexpr float scale = F::scale;
  static constexpr Position position = static_cast<Position>(F::position);
  static constexpr float rope_base = F::rope_base;
  static constexpr QkNorm qk_norm = static_cast<QkNorm>(F::qk_norm);
  static constexpr float qk_norm_eps = F::qk_norm_eps;
  static constexpr bool qk_norm_unit_offset = F::qk_norm_unit_offset;
  static constexpr std::size_t relative_buckets = F::relative_buckets;
  static constexpr std::size_t relative_max_distance = F::relative_max_distance;
  static constexpr bool relative_bidirectional = F::relative_bidirectional;
  static constexpr WeightType weight_type = has_int8_weights<F>::value ? WeightType::int8 : WeightType::f32;
};

// The fixture's weights; with int8 ones (Int8), those and their scales in place of the floats
// (the fixture's floats are then the dequantized weights: the float layer's on the same values).
template <class F, bool Int8 = has_int8_weights<F>::value>
MhaWeights feature_weights() {
  MhaWeights w;
  if constexpr (Int8) {
    w.in_proj_weight_int8 = span_of(F::in_proj_weight_int8);
    w.in_proj_weight_scale = span_of(F::in_proj_weight_scale);
    w.out_proj_weight_int8 = span_of(F::out_proj_weight_int8);
    w.out_proj_weight_scale = span_of(F::out_proj_weight_scale);
  } else {
    w.in_proj_weight = span_of(F::in_proj_weight);
    w.out_proj_weight = span_of(F::out_proj_weight);
  }
  w.in_proj_bias = span_of(F::in_proj_bias);
  w.out_proj_bias = span_of(F::out_proj_bias);
  w.q_norm_weight = span_of(F::q_norm_weight);
  w.k_norm_weight = span_of(F::k_norm_weight);
  w.relative_attention_bias = span_of(F::relative_attention_bias);
  return w;
}

template <class F>
ForwardOptions feature_options() {
  ForwardOptions o;
  o.masks.causal = F::causal;
  o.average_attn_weights = F::average_attn_weights;
  return o;  // scale 0: the Config's (F::scale, or 1/sqrt(head_dim))
}

// The float32 error budget of emha against torch, as seed_tolerance (seed_support.hpp): each side
// runs dot products of lengths d_model (projection), head_dim (scores), S_kv (P*V) and heads *
// head_dim (output projection), and a QK-norm's two row reductions (head_dim, or the whole
// projection); |emha - torch| <= 4 * n_chain * u * (1 + |ref|). The attention weights stop
// before P*V.
template <class F>
constexpr std::size_t qk_norm_length = F::qk_norm == 0 ? 0 : F::qk_norm == 1 ? 2 * F::head_dim : 2 * F::heads * F::head_dim;
template <class F>
double feature_tolerance() {
  return 4.0 * double(F::d_model + F::head_dim + F::seq_kv + F::heads * F::head_dim + qk_norm_length<F>) / 16777216.0;
}
template <class F>
double feature_weights_tolerance() {
  return 4.0 * double(F::d_model + F::head_dim + qk_norm_length<F>) / 16777216.0;
}

}  // namespace emha::test

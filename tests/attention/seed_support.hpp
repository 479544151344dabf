// SPDX-License-Identifier: Apache-2.0
#pragma once
// Reads a generated seed-module fixture (tests/attention/seed_fixtures/*.hpp, from
// tests/attention/gen_seed_fixtures.py) into emha's API types: the Config its module maps onto,
// the weights, masks and options. The fixture's integer codes are the enumerators' order.

#include <cstddef>
#include <type_traits>

#include "attention/fixture_support.hpp"
#include "emha/emha.hpp"

namespace emha::test {

// A fixture's RoPE scaling: its rope_scaling member where it has one, else none.
template <class F, class = void>
struct SeedRopeScaling {
  static constexpr RopeScalingParams value{};
};
template <class F>
struct SeedRopeScaling<F, std::void_t<decltype(F::rope_scaling)>> {
  static constexpr RopeScalingParams value = F::rope_scaling;
};

template <class F, bool Prepack = true>
struct SeedConfig : MhaConfig<F::d_model, F::heads, F::seq_q, F::seq_kv> {
  static constexpr std::size_t kv_heads = F::kv_heads;
  static constexpr std::size_t sliding_window = F::sliding_window;
  static constexpr std::size_t max_batch = F::batch;
  static constexpr bool prepack_weights = Prepack;
  static constexpr ProjectionBias projection_bias{F::q_bias, F::k_bias, F::v_bias, F::out_bias};
  static constexpr Position position = static_cast<Position>(F::position);
  static constexpr RopePairing rope_pairing = static_cast<RopePairing>(F::rope_pairing);
  static constexpr std::size_t rope_dims = F::rope_dims;
  static constexpr float rope_base = F::rope_base;
  static constexpr RopeScalingParams rope_scaling = SeedRopeScaling<F>::value;
  static constexpr NormPlacement norm = static_cast<NormPlacement>(F::norm);
  static constexpr NormKind norm_kind = static_cast<NormKind>(F::norm_kind);
  static constexpr float norm_eps = F::norm_eps;
  static constexpr bool norm_affine = F::norm_affine;
  static constexpr HeadSplit head_split = static_cast<HeadSplit>(F::head_split);
  // The module's scale at compile time where the fixture asks for it (else seed_options passes it
  // in ForwardOptions::scale); 0: 1/sqrt(d_k).
  static constexpr float scale = F::config_scale ? F::scale : 0.0f;
};

template <class F>
MhaWeights seed_weights() {
  MhaWeights w;
  w.in_proj_weight = span_of(F::in_proj_weight);
  w.in_proj_bias = span_of(F::in_proj_bias);
  w.out_proj_weight = span_of(F::out_proj_weight);
  w.out_proj_bias = span_of(F::out_proj_bias);
  w.norm_weight = span_of(F::norm_weight);
  w.norm_bias = span_of(F::norm_bias);
  return w;
}

// The shape: fixture_shape<F>() (fixture_support.hpp), the same members.

// query [B, S_q, D] or [S_q, B, D] += pe [S_q, D] for every sequence: the blog encoder's input,
// emb + its sinusoidal table (F::add_sinusoidal).
template <class F>
void add_positions(float* query, const float* pe) {
  for (std::size_t b = 0; b < F::batch; ++b)
    for (std::size_t s = 0; s < F::seq_q; ++s) {
      float* row = query + (F::batch_first ? b * F::seq_q + s : s * F::batch + b) * F::d_model;
      for (std::size_t j = 0; j < F::d_model; ++j) row[j] += pe[s * F::d_model + j];
    }
}

template <class F>
ForwardOptions seed_options() {
  ForwardOptions o;
  o.masks.causal = F::causal;
  o.masks.key_ignored = span_of(F::key_padding_mask);
  o.masks.attn_additive = span_of(F::attn_mask_additive);
  o.masks.attend = span_of(F::attend_mask);
  o.masks.attend_rows = F::attend_rows ? F::attend_rows : 1;
  o.masks.attend_batch = F::attend_batch ? F::attend_batch : 1;
  o.masks.score_bias = span_of(F::score_bias);
  o.masks.score_bias_shape = MaskShape::per_batch_head;
  o.average_attn_weights = F::average_attn_weights;
  o.scale = F::config_scale ? 0.0f : F::scale;  // 0: Config::scale
  return o;
}

// The float32 error budget of emha against torch (fixture_tolerance's argument): each side runs
// dot products of lengths d_model (projection), d_k (scores), S_kv (P*V) and d_model (output
// projection), and a norm's two row reductions of d_model; |emha - torch| <= 4 * n_chain * u *
// (1 + |ref|). The attention weights stop before P*V.
template <class F>
double seed_tolerance() {
  const std::size_t norm = F::norm != 0 ? 2 * F::d_model : 0;
  return 4.0 * double(2 * F::d_model + F::d_model / F::heads + F::seq_kv + norm) / 16777216.0;
}
template <class F>
double seed_weights_tolerance() {
  const std::size_t norm = F::norm == 2 ? 2 * F::d_model : 0;  // pre-LN runs before the scores
  return 4.0 * double(F::d_model + F::d_model / F::heads + norm) / 16777216.0;
}

}  // namespace emha::test

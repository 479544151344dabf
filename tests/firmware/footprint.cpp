// SPDX-License-Identifier: Apache-2.0
// What emha costs a firmware, built once per probe and once without emha:
//   EMHA_FOOTPRINT_MHA=1  the reference config: one MultiHeadAttention, weights read in place, a
//                         causal self-attention forward
//   EMHA_FOOTPRINT_MHA=2  a decoder: RoPE, pre-RMSNorm, GQA (2 K/V heads), no biases; a prefill and
//                         one decode step through a KvCache
//   EMHA_FOOTPRINT_MHA=3  a T5 encoder layer: relative position bias, pre-RMSNorm, scale 1, no biases
//   EMHA_FOOTPRINT_MHA=4  the reference config with int8 weights (WeightType::int8, W8A32), in place
//   EMHA_FOOTPRINT_MHA=5  the reference shape in full-integer int8 (Arithmetic::s8): int8 weights,
//                         int32 biases and multipliers in place, a causal forward on int8 rows
//   EMHA_FOOTPRINT_MHA=6  the same in 16x8 (Arithmetic::s16x8): int8 weights, int64 biases and
//                         multipliers in place, a causal forward on int16 rows
//   undefined             the same start-up code and the same weight and activation buffers, no emha.
// tests/cross.sh prints `size` of each probe minus the baseline: emha's code and constants (flash)
// and the objects with their arena (and cache) plus the port's state (RAM). The buffers sit in
// .bss in every build, so they cancel out; the probes read their weights from them.
#include <cstddef>
#include <cstdint>

// External linkage: the baseline must keep them too (it only reads them).
namespace footprint {
constexpr std::size_t d = 64, seq = 32;
float in_proj_weight[3 * d * d], in_proj_bias[3 * d], out_proj_weight[d * d], out_proj_bias[d];
std::int8_t in_proj_int8[3 * d * d], out_proj_int8[d * d];
float weight_scale[4 * d];  // [in_proj rows | out_proj rows]
std::int32_t bias_s32[4 * d], multiplier_s32[8 * d];  // Arithmetic::s8: [q | k | v | out] rows
std::int64_t bias_s64[4 * d];                          // Arithmetic::s16x8
float x[seq * d], y[seq * d];

// Reads one element of every buffer, so that every build keeps them all (the linker drops an
// array nobody reads, and the buffers must cancel out of the differences).
inline float keep_buffers() {
  volatile float keep = in_proj_weight[0] + in_proj_bias[0] + out_proj_weight[0] + out_proj_bias[0] + x[0] +
                        in_proj_int8[0] + out_proj_int8[0] + weight_scale[0] + float(bias_s32[0]) +
                        float(multiplier_s32[0]) + float(bias_s64[0]);
  return keep;
}
}  // namespace footprint
using namespace footprint;

#ifdef EMHA_FOOTPRINT_MHA
#include <tuple>
#include <type_traits>

#include "emha/emha.hpp"

namespace {
struct Reference : emha::MhaConfig<d, /*heads*/ 4, seq> {
  static constexpr bool prepack_weights = false;  // weights stay where they are (flash)
};
struct Decoder : emha::MhaConfig<d, /*heads*/ 4, seq, /*max_seq_kv*/ 2 * seq> {
  static constexpr bool prepack_weights = false;
  static constexpr std::size_t kv_heads = 2;
  static constexpr bool bias = false;
  static constexpr emha::Position position = emha::Position::rope;
  static constexpr emha::NormPlacement norm = emha::NormPlacement::pre;
  static constexpr emha::NormKind norm_kind = emha::NormKind::rms_norm;
};
struct T5Encoder : emha::MhaConfig<d, /*heads*/ 4, seq> {
  static constexpr bool prepack_weights = false;
  static constexpr bool bias = false;
  static constexpr float scale = 1.0f;
  static constexpr emha::Position position = emha::Position::relative_bias;
  static constexpr emha::NormPlacement norm = emha::NormPlacement::pre;
  static constexpr emha::NormKind norm_kind = emha::NormKind::rms_norm;
};
struct ReferenceInt8 : Reference {
  static constexpr emha::WeightType weight_type = emha::WeightType::int8;
};
struct ReferenceS8 : emha::MhaConfig<d, /*heads*/ 4, seq> {
  static constexpr emha::Arithmetic arithmetic = emha::Arithmetic::s8;
};
struct ReferenceS16x8 : emha::MhaConfig<d, /*heads*/ 4, seq> {
  static constexpr emha::Arithmetic arithmetic = emha::Arithmetic::s16x8;
};
static_assert(T5Encoder::relative_buckets * T5Encoder::heads <= sizeof in_proj_bias / sizeof(float),
              "T5's bias table fits in the in_proj_bias it does not use");

template <class Config>
emha::MultiHeadAttention<Config> attention;
template <class Config>
emha::KvCache<Config> cache;

// The full-integer layer: its weights and parameters read in place, a causal forward on int8
// rows (x and y's bytes); 0 when all is ok. A template, so that only its probe has the object.
template <class P>
int probe_s8() {
  const auto* mult = reinterpret_cast<const emha::QuantizedMultiplier*>(multiplier_s32);
  emha::MhaS8Weights w;
  emha::ProjectionS8* p[4] = {&w.q, &w.k, &w.v, &w.out};
  for (std::size_t i = 0; i < 4; ++i) {
    const std::int8_t* weight = i < 3 ? in_proj_int8 + i * d * d : out_proj_int8;
    *p[i] = {{weight, d * d}, {bias_s32 + i * d, d}, {mult + i * d, d}};
  }
  w.scores = w.context = mult[0];
  w.softmax = {1 << 30, 21, -3968};
  if (attention<P>.set_weights(w) != emha::Status::ok) return 1;
  emha::ForwardOptionsS8 options;
  options.masks.causal = true;
  const auto* in = reinterpret_cast<const std::int8_t*>(x);
  auto* out = reinterpret_cast<std::int8_t*>(y);
  return attention<P>.forward({seq, seq, 1}, {in, seq * d}, {in, seq * d}, {in, seq * d}, {out, seq * d},
                                        options) == emha::Status::ok
             ? 0
             : 1;
}

// The 16x8 layer the same way, on int16 rows (x and y's bytes).
template <class P>
int probe_s16x8() {
  const auto* mult = reinterpret_cast<const emha::QuantizedMultiplier*>(multiplier_s32);
  emha::MhaS16x8Weights w;
  emha::ProjectionS16x8* p[4] = {&w.q, &w.k, &w.v, &w.out};
  for (std::size_t i = 0; i < 4; ++i) {
    const std::int8_t* weight = i < 3 ? in_proj_int8 + i * d * d : out_proj_int8;
    *p[i] = {{weight, d * d}, {bias_s64 + i * d, d}, {mult + i * d, d}};
  }
  w.scores = w.context = mult[0];
  w.softmax.input = {1 << 30, 2};
  if (attention<P>.set_weights(w) != emha::Status::ok) return 1;
  emha::ForwardOptionsS16x8 options;
  options.masks.causal = true;
  const auto* in = reinterpret_cast<const std::int16_t*>(x);
  auto* out = reinterpret_cast<std::int16_t*>(y);
  return attention<P>.forward({seq, seq, 1}, {in, seq * d}, {in, seq * d}, {in, seq * d}, {out, seq * d},
                              options) == emha::Status::ok
             ? 0
             : 1;
}

// set_weights with the weights in place, then the probe's forward: 0 when all is ok.
template <class P>
int probe() {
  if constexpr (std::is_same_v<P, ReferenceS8>) {
    return probe_s8<P>();
  } else if constexpr (std::is_same_v<P, ReferenceS16x8>) {
    return probe_s16x8<P>();
  } else {
    constexpr std::size_t in_proj = (P::heads + 2 * P::kv_heads) * (d / P::heads) * d;  // [Q | K | V] rows x d
    static_assert(in_proj <= sizeof in_proj_weight / sizeof(float), "the probe's in_proj fits");
    emha::MhaWeights w;
    if constexpr (P::weight_type == emha::WeightType::int8) {
      w.in_proj_weight_int8 = {in_proj_int8, in_proj};
      w.in_proj_weight_scale = {weight_scale, 3 * d};
      w.out_proj_weight_int8 = out_proj_int8;
      w.out_proj_weight_scale = {weight_scale + 3 * d, d};
    } else {
      w.in_proj_weight = {in_proj_weight, in_proj};
      w.out_proj_weight = out_proj_weight;
    }
    if constexpr (P::bias) {
      w.in_proj_bias = in_proj_bias;
      w.out_proj_bias = out_proj_bias;
    } else {
      w.norm_weight = out_proj_bias;  // [d]: the configs without biases have a norm
    }
    if constexpr (P::position == emha::Position::relative_bias)
      w.relative_attention_bias = {in_proj_bias, P::relative_buckets * P::heads};
    if (attention<P>.set_weights(w) != emha::Status::ok) return 1;
    emha::ForwardOptions options;
    options.masks.causal = P::position != emha::Position::relative_bias;  // T5's encoder: none
    if constexpr (std::is_same_v<P, Decoder>) {  // a prefill, then one new token
      if (attention<P>.forward({seq, seq, 1}, x, y, cache<P>, options) != emha::Status::ok) return 1;
      const emha::AttentionShape step{1, cache<P>.keys(1), 1};
      return attention<P>.forward(step, {x, d}, {y, d}, cache<P>, options) == emha::Status::ok ? 0 : 1;
    }
    return attention<P>.forward({seq, seq, 1}, x, x, x, y, options) == emha::Status::ok ? 0 : 1;
  }
}
}  // namespace

int main() {
  using Probes = std::tuple<Reference, Decoder, T5Encoder, ReferenceInt8, ReferenceS8,
                            ReferenceS16x8>;  // EMHA_FOOTPRINT_MHA = 1 .. 6
  y[1] = keep_buffers();
  return probe<std::tuple_element_t<EMHA_FOOTPRINT_MHA - 1, Probes>>();
}
#else
int main() {
  y[0] = keep_buffers();
  return y[0] == 0.0f ? 0 : 1;
}
#endif

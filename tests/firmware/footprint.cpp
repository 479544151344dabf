// SPDX-License-Identifier: Apache-2.0
// What emha costs a firmware, built once per probe and once without emha:
//   EMHA_FOOTPRINT_MHA=1  the reference config: one MultiHeadAttention, weights read in place, a
//                         causal self-attention forward
//   EMHA_FOOTPRINT_MHA=2  a decoder: RoPE, pre-RMSNorm, GQA (2 K/V heads), no biases; a prefill and
//                         one decode step through a KvCache
//   EMHA_FOOTPRINT_MHA=3  a T5 encoder layer: relative position bias, pre-RMSNorm, scale 1, no biases
//   undefined             the same start-up code and the same weight and activation buffers, no emha.
// tests/cross.sh prints `size` of each probe minus the baseline: emha's code and constants (flash)
// and the objects with their arena (and cache) plus the port's state (RAM). The buffers sit in
// .bss in every build, so they cancel out; the probes read their weights from them.
#include <cstddef>

// External linkage: the baseline must keep them too (it only reads them).
namespace footprint {
constexpr std::size_t d = 64, seq = 32;
float in_proj_weight[3 * d * d], in_proj_bias[3 * d], out_proj_weight[d * d], out_proj_bias[d];
float x[seq * d], y[seq * d];
}  // namespace footprint
using namespace footprint;

#ifdef EMHA_FOOTPRINT_MHA
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
constexpr std::size_t kv = Decoder::kv_heads * d / Decoder::heads;  // the decoder's K and V width
static_assert((d + 2 * kv) * d <= sizeof in_proj_weight / sizeof(float), "the decoder's in_proj fits");
static_assert(T5Encoder::relative_buckets * T5Encoder::heads <= sizeof in_proj_bias / sizeof(float),
              "T5's bias table fits in the unused in_proj_bias");
}  // namespace

#if EMHA_FOOTPRINT_MHA == 1
namespace {
emha::MultiHeadAttention<Reference> attention;
}  // namespace

int main() {
  emha::MhaWeights w;
  w.in_proj_weight = in_proj_weight;
  w.in_proj_bias = in_proj_bias;
  w.out_proj_weight = out_proj_weight;
  w.out_proj_bias = out_proj_bias;
  if (attention.set_weights(w) != emha::Status::ok) return 1;
  emha::ForwardOptions options;
  options.masks.causal = true;
  return attention.forward({seq, seq, 1}, x, x, x, y, options) == emha::Status::ok ? 0 : 1;
}
#elif EMHA_FOOTPRINT_MHA == 2
namespace {
emha::MultiHeadAttention<Decoder> attention;
emha::KvCache<Decoder> cache;
}  // namespace

int main() {
  emha::MhaWeights w;
  w.in_proj_weight = {in_proj_weight, (d + 2 * kv) * d};
  w.out_proj_weight = out_proj_weight;
  w.norm_weight = out_proj_bias;  // [d]: this config has no output bias
  if (attention.set_weights(w) != emha::Status::ok) return 1;
  emha::ForwardOptions options;
  options.masks.causal = true;
  if (attention.forward({seq, seq, 1}, x, y, cache, options) != emha::Status::ok) return 1;  // prefill
  const emha::AttentionShape step{1, cache.keys(1), 1};  // one new token
  return attention.forward(step, {x, d}, {y, d}, cache, options) == emha::Status::ok ? 0 : 1;
}
#elif EMHA_FOOTPRINT_MHA == 3
namespace {
emha::MultiHeadAttention<T5Encoder> attention;
}  // namespace

int main() {
  emha::MhaWeights w;
  w.in_proj_weight = in_proj_weight;
  w.out_proj_weight = out_proj_weight;
  w.norm_weight = out_proj_bias;  // [d]: this config has no output bias
  w.relative_attention_bias = {in_proj_bias, T5Encoder::relative_buckets * T5Encoder::heads};
  if (attention.set_weights(w) != emha::Status::ok) return 1;
  return attention.forward({seq, seq, 1}, x, x, x, y) == emha::Status::ok ? 0 : 1;
}
#endif
#else
int main() {
  volatile float keep = in_proj_weight[0] + in_proj_bias[0] + out_proj_weight[0] + out_proj_bias[0] + x[0];
  y[0] = keep;
  return y[0] == 0.0f ? 0 : 1;
}
#endif

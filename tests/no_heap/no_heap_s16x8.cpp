// SPDX-License-Identifier: Apache-2.0
#include "attention/fixtures/s16x8_layer.hpp"
#include "emha/emha.hpp"
#include "no_heap_attention.hpp"

namespace {
namespace f = s16x8_fixtures::gqa_causal_padding;
struct S16x8 : emha::MhaConfig<f::d, f::heads, f::sq, f::skv> {
  static constexpr std::size_t kv_heads = f::kv_heads, head_dim = f::head_dim, max_batch = f::batch;
  static constexpr emha::Arithmetic arithmetic = emha::Arithmetic::s16x8;
  static constexpr emha::Rounding rounding = emha::Rounding::single_rounding;
};
std::int16_t g_out[f::batch * f::sq * f::d], g_probs[f::batch * f::heads * f::sq * f::skv];
}  // namespace

NoHeapAttentionResult run_s16x8_without_heap() noexcept {
  static emha::MultiHeadAttention<S16x8> layer;  // constructed under the gate
  bool ok = layer.set_weights(f::weights()) == emha::Status::ok;
  emha::ForwardOptionsS16x8 o;
  o.masks.causal = true;
  o.masks.key_ignored = f::key_ignored;
  o.attn_weights = g_probs;
  const emha::AttentionShape shape{f::sq, f::skv, f::batch, emha::Layout::seq_first};
  const emha::Span<const std::int16_t> x = f::query;
  ok = ok && layer.forward(shape, x, x, x, g_out, o) == emha::Status::ok;
  ok = ok && layer.forward_reference(shape, x, x, x, g_out, o) == emha::Status::ok;
  for (std::size_t i = 0; i < sizeof g_out / sizeof g_out[0]; ++i) ok = ok && g_out[i] == f::expected_out[i];
  return {ok};
}

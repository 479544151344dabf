#include "no_heap_attention.hpp"

#include "attention/fixture_support.hpp"
#include "fixtures/combined.hpp"

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

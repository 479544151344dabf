// SPDX-License-Identifier: Apache-2.0
// MultiHeadAttention on bad input: every error is a Status, returned before anything is written
// (outputs compared whole, guard elements around them); values at the edge of their type
// (causal offsets up to SIZE_MAX, enums out of range) are either exact or refused.

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "key_padding_mha.hpp"

using emha::Status;

namespace {

using namespace emha::test::key_padding_mha;  // F, Cfg, Mha, D, make_mha()
struct NoBiasCfg : Cfg {
  static constexpr bool bias = false;
};
struct InPlace : Cfg {
  static constexpr bool prepack_weights = false;
};

const auto q = emha::test::span_of(F::query);
const auto k = emha::test::span_of(F::key);
const auto v = emha::test::span_of(F::value);
const emha::AttentionShape full{F::seq_q, F::seq_kv, F::batch};

// out [B, S_q, D] and per-head attention weights, with guard elements on both sides.
struct Outputs {
  static constexpr std::size_t guard = 8, n_out = F::batch * F::seq_q * D,
                               n_w = F::batch * F::heads * F::seq_q * F::seq_kv;
  std::vector<float> out = std::vector<float>(n_out + 2 * guard, 7.0f);
  std::vector<float> w = std::vector<float>(n_w + 2 * guard, 7.0f);
  emha::Span<float> out_span() { return {out.data() + guard, n_out}; }
  emha::Span<float> w_span() { return {w.data() + guard, n_w}; }
  bool untouched() const {
    for (float x : out) if (x != 7.0f) return false;
    for (float x : w) if (x != 7.0f) return false;
    return true;
  }
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("bad input returns an error and writes nothing") {
  auto mha = make_mha();
  Outputs o;
  const auto out = o.out_span();
  const std::size_t n = Outputs::n_out;
  emha::ForwardOptions with_w;
  with_w.attn_weights = {o.w.data() + Outputs::guard, F::batch * F::seq_q * F::seq_kv};

  CHECK(mha->forward({F::seq_q + 1, F::seq_kv, 1}, q, k, v, out, with_w) == Status::too_long);
  CHECK(mha->forward({F::seq_q, F::seq_kv + 1, 1}, q, k, v, out, with_w) == Status::too_long);
  CHECK(mha->forward({1, 1, F::batch + 1}, q, k, v, out, with_w) == Status::too_long);
  CHECK(mha->forward({0, F::seq_kv, 1}, q, k, v, out, with_w) == Status::invalid_argument);
  CHECK(mha->forward({F::seq_q, 0, 1}, q, k, v, out, with_w) == Status::invalid_argument);
  CHECK(mha->forward({F::seq_q, F::seq_kv, 0}, q, k, v, out, with_w) == Status::invalid_argument);
  CHECK(mha->forward(full, {}, k, v, out, with_w) == Status::null_pointer);
  CHECK(mha->forward(full, q, {nullptr, 100}, v, out, with_w) == Status::null_pointer);
  CHECK(mha->forward(full, q, k, v, {}, with_w) == Status::null_pointer);
  CHECK(mha->forward(full, {q.data, q.size - 1}, k, v, out, with_w) == Status::size_mismatch);
  CHECK(mha->forward(full, q, {k.data, k.size - 1}, v, out, with_w) == Status::size_mismatch);
  CHECK(mha->forward(full, q, k, {v.data, v.size - 1}, out, with_w) == Status::size_mismatch);
  CHECK(mha->forward(full, q, k, v, {out.data, n - 1}, with_w) == Status::size_mismatch);

  emha::ForwardOptions opt = with_w;
  opt.attn_weights.size -= 1;
  CHECK(mha->forward(full, q, k, v, out, opt) == Status::size_mismatch);
  opt = with_w;
  opt.average_attn_weights = false;  // needs heads times more room
  CHECK(mha->forward(full, q, k, v, out, opt) == Status::size_mismatch);
  opt = with_w;
  opt.attn_weights = {nullptr, 3};  // given, but null
  CHECK(mha->forward(full, q, k, v, out, opt) == Status::null_pointer);
  opt = with_w;
  const std::size_t too_long_len[2] = {F::seq_kv + 1, 1};
  opt.masks.key_lengths = too_long_len;
  CHECK(mha->forward(full, q, k, v, out, opt) == Status::invalid_argument);
  opt = with_w;
  const std::size_t one_len[1] = {3};
  opt.masks.key_lengths = one_len;  // one length for two sequences
  CHECK(mha->forward(full, q, k, v, out, opt) == Status::size_mismatch);
  opt = with_w;
  const bool ignore[3] = {};
  opt.masks.key_ignored = ignore;
  CHECK(mha->forward(full, q, k, v, out, opt) == Status::size_mismatch);
  opt = with_w;
  const float add[F::seq_q * F::seq_kv] = {};
  opt.masks.attn_additive = add;
  opt.masks.attn_mask_shape = emha::MaskShape::per_head;  // needs heads times more
  CHECK(mha->forward(full, q, k, v, out, opt) == Status::size_mismatch);
  opt = with_w;
  opt.scale = NAN;
  CHECK(mha->forward(full, q, k, v, out, opt) == Status::invalid_argument);
  opt.scale = INFINITY;
  CHECK(mha->forward(full, q, k, v, out, opt) == Status::invalid_argument);
  CHECK(o.untouched());

  Mha no_weights;
  CHECK(no_weights.forward(full, q, k, v, out) == Status::invalid_argument);
  CHECK(o.untouched());
  // And the control: the same call with good arguments writes, inside the guards.
  CHECK(mha->forward(full, q, k, v, out, with_w) == Status::ok);
  CHECK(!o.untouched());
  CHECK(o.out[Outputs::guard - 1] == 7.0f);
  CHECK(o.out[Outputs::guard + n] == 7.0f);
}

TEST_CASE("enum values outside their enumerators are invalid_argument") {
  auto mha = make_mha();
  Outputs o;
  emha::AttentionShape shape = full;
  shape.layout = static_cast<emha::Layout>(7);
  CHECK(mha->forward(shape, q, k, v, o.out_span()) == Status::invalid_argument);
  emha::ForwardOptions opt;
  opt.masks.attn_mask_shape = static_cast<emha::MaskShape>(9);  // with no mask given, too
  CHECK(mha->forward(full, q, k, v, o.out_span(), opt) == Status::invalid_argument);
  const float add[F::seq_q * F::seq_kv] = {};
  opt.masks.attn_additive = add;
  CHECK(mha->forward(full, q, k, v, o.out_span(), opt) == Status::invalid_argument);
  CHECK(mha->forward_reference(full, q, k, v, o.out_span(), opt) == Status::invalid_argument);
  CHECK(o.untouched());
}

TEST_CASE("causal offsets past S_kv, up to SIZE_MAX, mask no key") {
  // Query i sees keys j <= i + offset: from offset S_kv - 1 on, every key; the result must be
  // the unmasked one bit for bit, on both paths, whatever the size_t (2^63 and above used to
  // wrap to a negative diagonal and mask keys, or skip key tiles, with status ok).
  auto mha = make_mha();
  for (bool with_weights : {false, true}) {
    Outputs plain;
    emha::ForwardOptions opt;
    if (with_weights) opt.attn_weights = plain.w_span(), opt.average_attn_weights = false;
    REQUIRE(mha->forward(full, q, k, v, plain.out_span(), opt) == Status::ok);
    for (std::size_t offset : {F::seq_kv - 1, F::seq_kv, F::seq_kv + 5, std::size_t(PTRDIFF_MAX) - 3,
                               std::size_t(PTRDIFF_MAX), std::size_t(PTRDIFF_MAX) + 1, SIZE_MAX - 1,
                               SIZE_MAX}) {
      INFO("offset " << offset << (with_weights ? ", with weights" : ", fused"));
      Outputs causal;
      emha::ForwardOptions c = opt;
      if (with_weights) c.attn_weights = causal.w_span();
      c.masks.causal = true;
      c.masks.causal_offset = offset;
      REQUIRE(mha->forward(full, q, k, v, causal.out_span(), c) == Status::ok);
      CHECK(same_bits(causal.out, plain.out));
      CHECK(same_bits(causal.w, plain.w));
    }
  }
}

TEST_CASE("set_weights and forward share one rule for spans: {nullptr, n} is null_pointer") {
  // A span is absent only as {nullptr, 0}. A span the config does not use must be absent; given
  // with a pointer it is invalid_argument, given as {nullptr, n} it is null_pointer, exactly as
  // forward() treats an optional span such as attn_weights.
  const emha::MhaWeights good = emha::test::fixture_weights<F>();
  Mha mha;
  emha::MhaWeights w = good;
  w.out_proj_bias = {};
  CHECK(mha.set_weights(w) == Status::null_pointer);
  w = good;
  w.in_proj_weight.size -= 1;
  CHECK(mha.set_weights(w) == Status::size_mismatch);
  w = good;
  w.q_proj_weight = w.out_proj_weight;  // separate projections with kdim == vdim == d_model
  CHECK(mha.set_weights(w) == Status::invalid_argument);
  w = good;
  w.q_proj_weight = {nullptr, D * D};
  CHECK(mha.set_weights(w) == Status::null_pointer);
  w = good;
  w.v_proj_weight = {nullptr, 1};
  CHECK(mha.set_weights(w) == Status::null_pointer);

  emha::MultiHeadAttention<NoBiasCfg> nb;
  emha::MhaWeights no_bias = good;
  no_bias.in_proj_bias = {};
  no_bias.out_proj_bias = {};
  CHECK(nb.set_weights(good) == Status::invalid_argument);  // biases given with bias off
  w = no_bias;
  w.in_proj_bias = {nullptr, 3 * D};
  CHECK(nb.set_weights(w) == Status::null_pointer);
  w = no_bias;
  w.out_proj_bias = {nullptr, D};
  CHECK(nb.set_weights(w) == Status::null_pointer);

  // Refused weights are not taken: this object never had any, so forward refuses to run.
  Outputs o;
  CHECK(mha.forward(full, q, k, v, o.out_span()) == Status::invalid_argument);
  CHECK(o.untouched());
  CHECK(mha.set_weights(good) == Status::ok);
  CHECK(nb.set_weights(no_bias) == Status::ok);
}

TEST_CASE("an output sharing bytes with an input, the other output, a mask, weights or the arena is refused") {
  // One writable buffer holds copies of the inputs and room for the outputs, so that spans can
  // be made to overlap by a single float.
  const std::size_t nq = q.size, nk = k.size, nv = v.size, n_out = Outputs::n_out;
  std::vector<float> buf(nq + nk + nv + 2 * n_out, 0.0f);
  std::memcpy(buf.data(), q.data, nq * sizeof(float));
  std::memcpy(buf.data() + nq, k.data, nk * sizeof(float));
  std::memcpy(buf.data() + nq + nk, v.data, nv * sizeof(float));
  const emha::Span<const float> bq{buf.data(), nq}, bk{buf.data() + nq, nk}, bv{buf.data() + nq + nk, nv};
  float* const after = buf.data() + nq + nk + nv;  // first float past the inputs
  const std::vector<float> before = buf;

  auto mha = make_mha();
  // out's last float on query's first, on key's last, on value's last; out on itself as weights.
  CHECK(mha->forward(full, bq, bk, bv, {buf.data() - n_out + 1 + nq + nk + nv, n_out}) == Status::overlap);
  CHECK(mha->forward(full, bq, bk, bv, {buf.data() + nq - 1, n_out}) == Status::overlap);
  CHECK(mha->forward(full, bq, bk, bv, {after - 1, n_out}) == Status::overlap);
  CHECK(mha->forward(full, bq, bk, bv, {buf.data(), n_out}) == Status::overlap);
  emha::ForwardOptions opt;
  opt.attn_weights = {after + n_out - 1, F::batch * F::seq_q * F::seq_kv};  // on out's last float
  CHECK(mha->forward(full, bq, bk, bv, {after, n_out}, opt) == Status::overlap);
  opt.attn_weights = {buf.data() + 5, F::batch * F::seq_q * F::seq_kv};  // on query
  CHECK(mha->forward(full, bq, bk, bv, {after, n_out}, opt) == Status::overlap);
  CHECK(same_bits(buf, before));

  // A mask in the output's bytes: an additive mask read after the first sequence's output.
  std::vector<float> mask_and_out(F::seq_q * F::seq_kv + n_out, 0.0f);
  emha::ForwardOptions m;
  m.masks.attn_additive = {mask_and_out.data(), F::seq_q * F::seq_kv};
  CHECK(mha->forward(full, q, k, v, {mask_and_out.data() + F::seq_q * F::seq_kv - 1, n_out}, m) ==
        Status::overlap);
  CHECK(mha->forward(full, q, k, v, {mask_and_out.data() + F::seq_q * F::seq_kv, n_out}, m) == Status::ok);

  // Weights read in place and the output on them.
  std::vector<float> w_out(D * D + n_out);
  std::memcpy(w_out.data(), F::out_proj_weight, D * D * sizeof(float));
  emha::MhaWeights w = emha::test::fixture_weights<F>();
  w.out_proj_weight = {w_out.data(), D * D};
  auto in_place = std::make_unique<emha::MultiHeadAttention<InPlace>>();
  REQUIRE(in_place->set_weights(w) == Status::ok);
  CHECK(in_place->forward(full, q, k, v, {w_out.data() + 1, n_out}) == Status::overlap);
  CHECK(in_place->forward(full, q, k, v, {w_out.data() + D * D, n_out}) == Status::ok);

  // A caller's arena under the output.
  using CallerMha = emha::MultiHeadAttention<Cfg, emha::ArenaOwnership::caller>;
  std::vector<float> arena_and_out(Mha::arena_bytes / sizeof(float) + 1 + n_out);
  auto caller = std::make_unique<CallerMha>(emha::ArenaRef(arena_and_out.data(), Mha::arena_bytes));
  REQUIRE(caller->set_weights(emha::test::fixture_weights<F>()) == Status::ok);
  float* const past_arena = arena_and_out.data() + Mha::arena_bytes / sizeof(float) + 1;
  CHECK(caller->forward(full, q, k, v, {arena_and_out.data() + 16, n_out}) == Status::overlap);
  CHECK(caller->forward(full, q, k, v, {past_arena, n_out}) == Status::ok);

  // Inputs may overlap each other (self-attention passes one span three times), and an output
  // may start right after an input.
  CHECK(mha->forward(full, bq, bk, bv, {after, n_out}) == Status::ok);
}

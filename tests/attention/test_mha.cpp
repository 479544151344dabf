// SPDX-License-Identifier: Apache-2.0
// MultiHeadAttention behaviour beyond parity: arena budget, masks that must agree with each
// other, incremental decoding, scale, fully masked rows and caller arenas (bad input:
// test_mha_bad_input.cpp).

#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "attention/fixture_support.hpp"
#include "fixtures/combined.hpp"
#include "key_padding_mha.hpp"
#include "support/numeric.hpp"

using emha::Status;

namespace {

using namespace emha::test::key_padding_mha;  // F, Cfg, Mha, D, make_mha()
struct InPlace : emha::MhaConfig<64, 4, 32> {
  static constexpr bool prepack_weights = false;
};

struct Run {
  std::vector<float> out, weights;
  Status status;
};

Run run(Mha& mha, const emha::AttentionShape& shape, emha::ForwardOptions opt, bool want_weights = false) {
  Run r{std::vector<float>(shape.batch * shape.seq_q * D, 99.0f),
        std::vector<float>(shape.batch * Cfg::heads * shape.seq_q * shape.seq_kv, 99.0f), Status::ok};
  if (want_weights) opt.attn_weights = {r.weights.data(), r.weights.size()};
  r.status = mha.forward(shape, emha::test::span_of(F::query), emha::test::span_of(F::key),
                         emha::test::span_of(F::value), {r.out.data(), r.out.size()}, opt);
  return r;
}

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    // A compare, not std::fmax: aarch64 g++ 12.2 -O3 crashes vectorizing that reduction (ICE).
    const double d = std::fabs(double(a[i]) - double(b[i]));
    if (!(d <= m)) m = d;  // a NaN difference becomes the maximum
  }
  return m;
}

// Max over elements of |a - b| / (1 + |b|).
double max_scaled_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(double(a[i]) - double(b[i])) / (1 + std::fabs(double(b[i])));
    if (!(d <= m)) m = d;  // see max_diff
  }
  return m;
}

// Same float ops in another order: results agree to a few ulp of O(1) values.
constexpr double reorder_tol = 1e-5;

}  // namespace

struct Threads3 : emha::MhaConfig<64, 4, 32> {
  static constexpr std::size_t max_threads = 3;
};

TEST_CASE("arena bytes of reference configs are pinned") {
  // Regression guard on the memory budget (TFLM memory_arena_threshold_test): a change in these
  // numbers must be deliberate. Formula in lib/include/emha/detail/mha_plan.hpp.
  using A = emha::MultiHeadAttention<emha::MhaConfig<64, 4, 32>>;
  using B = emha::MultiHeadAttention<emha::MhaConfig<128, 4, 64>>;
  using C = emha::MultiHeadAttention<emha::MhaConfig<256, 8, 128>>;
  using A_in_place = emha::MultiHeadAttention<InPlace>;
  // (64, 4, 32): live Q|K|V 32*192*4+64 and ctx 32*64*4+64; then one task slot (+64 for the
  // slots' alignment) of the larger of the fused path (score tile 32*32*4+64, row max and sum
  // 2*(32*4+64), the tile GEMMs' scratch: one packed panel of gemm_max_nr columns, 32*32*4+64
  // for P_t*V_t) and the unfused one (scores 32*32*4+64, the same panel).
  CHECK(A::arena_bytes == 24640 + 8256 + (4160 + 384 + 4160) + 64);
  // max_threads = 3: three slots, each a multiple of 64 bytes.
  CHECK(emha::MultiHeadAttention<Threads3>::arena_bytes == 24640 + 8256 + 3 * (4160 + 384 + 4160) + 64);
  // Weights read in place: x*W_in^T packs W^T per call, one panel at a time (32 x 64 floats of A
  // are within gemm_per_panel_max_a_floats): 32*64*4+64, less than the fused path takes.
  CHECK(A_in_place::arena_bytes == A::arena_bytes);
  // Pre-packed weights: four matrices of 64 x (64 + 31) floats.
  CHECK(A::packed_weight_bytes == 4 * 64 * 95 * 4);
  CHECK(A_in_place::packed_weight_bytes == 0);
  // (128, 4, 64) and (256, 8, 128): the fused path is the larger, by its row max and sum (one
  // tile covers all S x S scores at these lengths); P_t*V_t packs one 32 x S panel.
  CHECK(B::arena_bytes == 98368 + 32832 + (16448 + 2 * (64 * 4 + 64) + 32 * 64 * 4 + 64) + 64);
  CHECK(C::arena_bytes == 393280 + 131136 + (65600 + 2 * (128 * 4 + 64) + 32 * 128 * 4 + 64) + 64);
}

namespace {
template <std::size_t S, bool Weights>
struct LongCfg : emha::MhaConfig<256, 8, S> {
  static constexpr bool attention_weights = Weights;
};
// Less the one-query chunk block (mha_split_floats: a step per mha_split_keys keys, 0 up to 384).
template <std::size_t S, bool Weights>
constexpr std::size_t long_split_bytes() {
  const std::size_t f = emha::detail::mha_split_floats(emha::MultiHeadAttention<LongCfg<S, Weights>>::dims);
  return f ? f * sizeof(float) + 64 : 0;
}
template <std::size_t S, bool Weights>
constexpr std::size_t long_arena = emha::MultiHeadAttention<LongCfg<S, Weights>>::arena_bytes - long_split_bytes<S, Weights>();
}  // namespace

TEST_CASE("fused-only arenas grow linearly in the sequence length, unfused ones do not") {
  constexpr std::size_t f256 = long_arena<256, false>, f512 = long_arena<512, false>,
                        f1024 = long_arena<1024, false>;
  static_assert(long_split_bytes<256, false>() == 0 && long_split_bytes<1024, false>() > 0);
  CHECK(f1024 - f512 == 2 * (f512 - f256));  // linear: equal steps per added position
  constexpr std::size_t u256 = long_arena<256, true>, u512 = long_arena<512, true>,
                        u1024 = long_arena<1024, true>;
  CHECK(u1024 - u512 > 2 * (u512 - u256));  // the [S_q x S_kv] scores: quadratic
  CHECK(f1024 < u1024);
  MESSAGE("arena bytes, d_model 256, 8 heads, fused only / with attention weights: S=256 "
          << f256 << " / " << u256 << ", S=512 " << f512 << " / " << u512 << ", S=1024 " << f1024
          << " / " << u1024);
}

TEST_CASE("the arena's high-water mark after forward is bounded by arena_bytes") {
  auto mha = make_mha();
  const Run r = run(*mha, {F::seq_q, F::seq_kv, F::batch}, {}, true);
  REQUIRE(r.status == Status::ok);
  CHECK(mha->arena().high_water() <= Mha::arena_bytes);
  // At least the Q|K|V, context and score buffers, which forward() sizes exactly.
  const std::size_t buffers = (F::seq_kv * 3 * D + F::seq_q * D + F::seq_q * F::seq_kv) * sizeof(float);
  CHECK(mha->arena().high_water() >= buffers);
  CHECK(mha->arena().used() == 0);
}

TEST_CASE("a caller-supplied arena works like the owned one and is checked") {
  auto owned = make_mha();
  const Run a = run(*owned, {F::seq_q, F::seq_kv, F::batch}, {});
  static emha::StaticArena<Mha::arena_bytes> storage;
  using CallerMha = emha::MultiHeadAttention<Cfg, emha::ArenaOwnership::caller>;
  CallerMha caller(storage);
  REQUIRE(caller.set_weights(emha::test::fixture_weights<F>()) == Status::ok);
  std::vector<float> out(a.out.size(), 0.0f);
  REQUIRE(caller.forward({F::seq_q, F::seq_kv, F::batch}, emha::test::span_of(F::query),
                         emha::test::span_of(F::key), emha::test::span_of(F::value),
                         {out.data(), out.size()}) == Status::ok);
  CHECK(max_diff(out, a.out) == 0.0);  // same code, same order: bit-identical

  std::vector<std::byte> small(Mha::arena_bytes - 1);
  CallerMha tiny(emha::ArenaRef(small.data(), small.size()));
  REQUIRE(tiny.set_weights(emha::test::fixture_weights<F>()) == Status::ok);
  std::vector<float> untouched(a.out.size(), 5.0f);
  CHECK(tiny.forward({F::seq_q, F::seq_kv, F::batch}, emha::test::span_of(F::query),
                     emha::test::span_of(F::key), emha::test::span_of(F::value),
                     {untouched.data(), untouched.size()}) == Status::no_space);
  for (float v : untouched) REQUIRE(v == 5.0f);
}

TEST_CASE("equivalent masks give the same result") {
  auto mha = make_mha();
  const emha::AttentionShape shape{F::seq_q, F::seq_kv, F::batch};
  const std::size_t lengths[2] = {9, 5};
  bool ignored[2 * 9] = {};
  for (std::size_t j = 5; j < 9; ++j) ignored[9 + j] = true;

  emha::ForwardOptions by_len, by_flag, by_bool, by_add;
  by_len.masks.key_lengths = lengths;
  by_flag.masks.key_ignored = ignored;
  // The same padding as a per-batch-head bool mask and as an additive mask.
  std::vector<char> masked_c(F::batch * F::heads * F::seq_q * F::seq_kv, 0);
  std::vector<float> additive(masked_c.size(), 0.0f);
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t h = 0; h < F::heads; ++h)
      for (std::size_t i = 0; i < F::seq_q; ++i)
        for (std::size_t j = lengths[b]; j < F::seq_kv; ++j) {
          const std::size_t idx = ((b * F::heads + h) * F::seq_q + i) * F::seq_kv + j;
          masked_c[idx] = 1;
          additive[idx] = emha::mask_neg_inf;
        }
  std::unique_ptr<bool[]> masked(new bool[masked_c.size()]);
  for (std::size_t i = 0; i < masked_c.size(); ++i) masked[i] = masked_c[i] != 0;
  by_bool.masks.attn_masked = {masked.get(), masked_c.size()};
  by_bool.masks.attn_mask_shape = emha::MaskShape::per_batch_head;
  by_add.masks.attn_additive = {additive.data(), additive.size()};
  by_add.masks.attn_mask_shape = emha::MaskShape::per_batch_head;

  const Run a = run(*mha, shape, by_len, true), b = run(*mha, shape, by_flag, true),
            c = run(*mha, shape, by_bool, true), d = run(*mha, shape, by_add, true);
  REQUIRE(a.status == Status::ok);
  REQUIRE(b.status == Status::ok);
  REQUIRE(c.status == Status::ok);
  REQUIRE(d.status == Status::ok);
  CHECK(max_diff(a.out, b.out) == 0.0);
  CHECK(max_diff(a.out, c.out) == 0.0);
  CHECK(max_diff(a.out, d.out) <= reorder_tol);
  // Masked keys get exactly zero weight: batch 1, every head, key 5..8.
  for (std::size_t i = 0; i < F::seq_q; ++i) CHECK(a.weights[(1 * 1 * F::seq_q + i) * F::seq_kv + 7] == 0.0f);
}

TEST_CASE("a query row with every key masked outputs out_proj.bias, never NaN") {
  auto mha = make_mha();
  const std::size_t lengths[2] = {9, 0};  // second sequence: no valid key at all
  emha::ForwardOptions opt;
  opt.masks.key_lengths = lengths;
  const Run r = run(*mha, {F::seq_q, F::seq_kv, F::batch}, opt, true);
  REQUIRE(r.status == Status::ok);
  const std::size_t rows_b0 = F::seq_q * D;
  for (std::size_t i = 0; i < F::seq_q; ++i)
    for (std::size_t j = 0; j < D; ++j) CHECK(r.out[rows_b0 + i * D + j] == F::out_proj_bias[j]);
  for (std::size_t i = 0; i < F::seq_q * F::seq_kv; ++i) CHECK(r.weights[F::seq_q * F::seq_kv + i] == 0.0f);
  for (std::size_t i = 0; i < rows_b0; ++i) CHECK(std::isfinite(r.out[i]));
}

TEST_CASE("causal offset: decoding the last query alone matches its row of the full pass") {
  auto mha = make_mha();
  // Self-attention on the key sequence, S = 9, causal; then only query 8 against all 9 keys.
  const std::size_t S = F::seq_kv;
  std::vector<float> x(F::key, F::key + S * D);  // batch 0 rows of key (kdim == d_model here)
  std::vector<float> full(S * D), last(D);
  emha::ForwardOptions opt;
  opt.masks.causal = true;
  using Cfg9 = emha::MhaConfig<D, Cfg::heads, 9>;
  auto m9 = std::make_unique<emha::MultiHeadAttention<Cfg9>>();
  REQUIRE(m9->set_weights(emha::test::fixture_weights<F>()) == Status::ok);
  REQUIRE(m9->forward({S, S}, {x.data(), x.size()}, {x.data(), x.size()}, {x.data(), x.size()},
                      {full.data(), full.size()}, opt) == Status::ok);
  opt.masks.causal_offset = S - 1;
  REQUIRE(m9->forward({1, S}, {x.data() + (S - 1) * D, D}, {x.data(), x.size()}, {x.data(), x.size()},
                      {last.data(), last.size()}, opt) == Status::ok);
  for (std::size_t j = 0; j < D; ++j) CHECK(std::fabs(last[j] - full[(S - 1) * D + j]) <= reorder_tol);
  // And query 3 alone, at offset 3, sees keys 0..3 only: same as the full pass's row 3.
  opt.masks.causal_offset = 3;
  REQUIRE(m9->forward({1, S}, {x.data() + 3 * D, D}, {x.data(), x.size()}, {x.data(), x.size()},
                      {last.data(), last.size()}, opt) == Status::ok);
  for (std::size_t j = 0; j < D; ++j) CHECK(std::fabs(last[j] - full[3 * D + j]) <= reorder_tol);
}

TEST_CASE("scale override equals the default scale with W_q and b_q rescaled") {
  const float s = 0.9f, dflt = 1.0f / std::sqrt(float(D / Cfg::heads));
  std::vector<float> w_in(F::in_proj_weight, F::in_proj_weight + 3 * D * D);
  std::vector<float> b_in(F::in_proj_bias, F::in_proj_bias + 3 * D);
  for (std::size_t i = 0; i < D * D; ++i) w_in[i] *= s / dflt;
  for (std::size_t i = 0; i < D; ++i) b_in[i] *= s / dflt;
  auto a = make_mha();
  auto b = std::make_unique<Mha>();
  emha::MhaWeights w = emha::test::fixture_weights<F>();
  w.in_proj_weight = {w_in.data(), w_in.size()};
  w.in_proj_bias = {b_in.data(), b_in.size()};
  REQUIRE(b->set_weights(w) == Status::ok);
  emha::ForwardOptions opt;
  opt.scale = s;
  const Run ra = run(*a, {F::seq_q, F::seq_kv, F::batch}, opt);
  const Run rb = run(*b, {F::seq_q, F::seq_kv, F::batch}, {});
  REQUIRE(ra.status == Status::ok);
  CHECK(max_diff(ra.out, rb.out) <= reorder_tol);
  const Run rc = run(*a, {F::seq_q, F::seq_kv, F::batch}, {});
  CHECK(max_diff(ra.out, rc.out) > 1e-3);  // and the override did change something
}

TEST_CASE("averaged attention weights are the mean of the per-head ones") {
  auto mha = make_mha();
  emha::ForwardOptions opt;
  const emha::AttentionShape shape{F::seq_q, F::seq_kv, F::batch};
  const Run avg = run(*mha, shape, opt, true);
  opt.average_attn_weights = false;
  const Run per = run(*mha, shape, opt, true);
  const std::size_t block = F::seq_q * F::seq_kv;
  for (std::size_t b = 0; b < F::batch; ++b)
    for (std::size_t i = 0; i < block; ++i) {
      double sum = 0;
      for (std::size_t h = 0; h < F::heads; ++h) sum += per.weights[(b * F::heads + h) * block + i];
      CHECK(std::fabs(sum / F::heads - avg.weights[b * block + i]) <= 1e-6);
    }
  CHECK(max_diff(avg.out, per.out) == 0.0);
}

namespace {
struct LongCross : emha::MhaConfig<40, 4, 110, 210> {  // d_k 10; several query and key tiles
  static constexpr std::size_t kdim = 24;
  static constexpr std::size_t max_batch = 2;
};
struct FusedOnly : LongCross {
  static constexpr bool attention_weights = false;
};
}  // namespace

TEST_CASE("fused tiles agree with the unfused path over many tiles and every mask") {
  constexpr std::size_t DM = 40, H = 4, SQ = 107, SKV = 203, B = 2;
  const auto w_q = emha::test::uniform(DM * DM, 1, -0.3f, 0.3f), w_k = emha::test::uniform(DM * 24, 2, -0.3f, 0.3f);
  const auto w_v = emha::test::uniform(DM * DM, 3, -0.3f, 0.3f), w_o = emha::test::uniform(DM * DM, 4, -0.3f, 0.3f);
  const auto b_in = emha::test::uniform(3 * DM, 5), b_o = emha::test::uniform(DM, 6);
  emha::MhaWeights w;
  w.q_proj_weight = {w_q.data(), w_q.size()};
  w.k_proj_weight = {w_k.data(), w_k.size()};
  w.v_proj_weight = {w_v.data(), w_v.size()};
  w.in_proj_bias = {b_in.data(), b_in.size()};
  w.out_proj_weight = {w_o.data(), w_o.size()};
  w.out_proj_bias = {b_o.data(), b_o.size()};
  const auto q = emha::test::uniform(B * SQ * DM, 7, -2, 2), k = emha::test::uniform(B * SKV * 24, 8, -2, 2);
  const auto v = emha::test::uniform(B * SKV * DM, 9, -2, 2);
  auto additive = emha::test::uniform(H * SQ * SKV, 10);
  for (std::size_t i = 0; i < additive.size(); i += 7) additive[i] = emha::mask_neg_inf;

  auto mha = std::make_unique<emha::MultiHeadAttention<LongCross>>();
  auto fused_only = std::make_unique<emha::MultiHeadAttention<FusedOnly>>();
  REQUIRE(mha->set_weights(w) == Status::ok);
  REQUIRE(fused_only->set_weights(w) == Status::ok);

  struct Case {
    const char* name;
    emha::AttentionMasks masks;
  };
  const std::size_t lengths[B] = {SKV, 150};
  Case cases[4] = {{"none", {}}, {"causal, offset S_kv - S_q", {}}, {"key lengths", {}}, {"per-head additive", {}}};
  cases[1].masks.causal = true;
  cases[1].masks.causal_offset = SKV - SQ;
  cases[2].masks.key_lengths = lengths;
  cases[3].masks.attn_additive = {additive.data(), additive.size()};
  cases[3].masks.attn_mask_shape = emha::MaskShape::per_head;
  cases[3].masks.causal = true;  // and queries 0.. see few keys: early tiles fully masked

  for (const Case& c : cases) {
    for (emha::Layout layout : {emha::Layout::batch_first, emha::Layout::seq_first}) {
      const emha::AttentionShape shape{SQ, SKV, B, layout};
      std::vector<float> fused(B * SQ * DM), fused2(B * SQ * DM), unfused(B * SQ * DM), ref(B * SQ * DM);
      std::vector<float> weights(B * SQ * SKV);
      emha::ForwardOptions o;
      o.masks = c.masks;
      REQUIRE(mha->forward(shape, {q.data(), q.size()}, {k.data(), k.size()}, {v.data(), v.size()},
                           {fused.data(), fused.size()}, o) == Status::ok);
      REQUIRE(fused_only->forward(shape, {q.data(), q.size()}, {k.data(), k.size()}, {v.data(), v.size()},
                                  {fused2.data(), fused2.size()}, o) == Status::ok);
      REQUIRE(mha->forward_reference(shape, {q.data(), q.size()}, {k.data(), k.size()}, {v.data(), v.size()},
                                     {ref.data(), ref.size()}, o) == Status::ok);
      o.attn_weights = {weights.data(), weights.size()};
      REQUIRE(mha->forward(shape, {q.data(), q.size()}, {k.data(), k.size()}, {v.data(), v.size()},
                           {unfused.data(), unfused.size()}, o) == Status::ok);
      // Float32 chains of length ~ d_model + d_k + S_kv + d_model on O(1) values, both sides:
      // the parity budget 4 * n * u * (1 + |ref|) (fixture_support.hpp).
      const double tol = 4.0 * double(24 + 10 + SKV + DM) * emha::test::u32;
      const double worst = max_scaled_diff(fused, unfused), worst_ref = max_scaled_diff(fused, ref);
      INFO(std::string(c.name) << (layout == emha::Layout::seq_first ? ", [S, B, DM]" : ", [B, S, DM]") << ": fused vs unfused "
                  << worst << ", vs reference " << worst_ref << ", tolerance " << tol);
      CHECK(worst <= tol);
      CHECK(worst_ref <= tol);
      CHECK(max_diff(fused, fused2) == 0.0);  // the fused-only config runs the same code
    }
  }
  CHECK(emha::MultiHeadAttention<FusedOnly>::arena_bytes < emha::MultiHeadAttention<LongCross>::arena_bytes);
  std::vector<float> out(B * SQ * DM), weights(B * SQ * SKV);
  emha::ForwardOptions o;
  o.attn_weights = {weights.data(), weights.size()};
  CHECK(fused_only->forward({SQ, SKV, B}, {q.data(), q.size()}, {k.data(), k.size()}, {v.data(), v.size()},
                            {out.data(), out.size()}, o) == Status::invalid_argument);
}

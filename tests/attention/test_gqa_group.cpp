// SPDX-License-Identifier: Apache-2.0
// GQA/MQA decode steps: with one query token per sequence, a group's query heads are stacked as
// the rows of one pass over their shared K/V head (lib/src/attention/group_attention.hpp, SIMD
// builds). Each row must be the per-head path's bits. The oracle is the same layer
// with kv_heads == heads whose K/V weights repeat each K/V head for the heads of its group
// (PyTorch's repeat_interleave): it attends head by head, and its K and V are the GQA layer's,
// bit for bit (each projected column is the same dot product). The two layers decode the same
// tokens through their caches, with RoPE or ALiBi, a rolling sliding window, per-head masks and
// key padding, over key tiles (mha_block_kv = 192) crossed mid-decode, and must give identical
// outputs at every call; prefill chunks (S_q > 1) run per head on both sides. Without a cache
// (S_q == 1 over static keys) the same, split over threads: identical for any thread count.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "emha/emha.hpp"
#include "support/numeric.hpp"

namespace {

using emha::AttentionShape;
using emha::Position;
using emha::Span;
using emha::Status;

template <std::size_t D, std::size_t H, std::size_t KV, Position P, std::size_t W = 0, std::size_t MaxQ = 192,
          std::size_t MaxKv = 512, std::size_t Threads = 1>
struct GroupCfg : emha::MhaConfig<D, H, MaxQ, MaxKv> {
  static constexpr std::size_t kv_heads = KV;
  static constexpr Position position = P;
  static constexpr std::size_t sliding_window = W;
  static constexpr std::size_t max_batch = 2;
  static constexpr std::size_t max_threads = Threads;
  static constexpr bool attention_weights = false;
};
// The same layer, one K/V head per query head: the per-head path's oracle.
template <class C>
struct AllHeads : C {
  static constexpr std::size_t kv_heads = C::heads;
};
// The same layer over key and value inputs `Width` wide (PyTorch's kdim, vdim).
template <class C, std::size_t Width>
struct KvWidth : C {
  static constexpr std::size_t kdim = Width, vdim = Width;
};

// Random weights of config C (GQA) and the same weights with every K/V head's rows repeated for
// the `group` heads that read it (the AllHeads<C> layer). Key and value inputs d_model wide: one
// in_proj_weight, as nn.MultiheadAttention's; kdim or vdim otherwise: W_q, W_k, W_v apart.
template <class C>
struct GroupWeights {
  static constexpr std::size_t D = C::d_model, dk = D / C::heads, kv = C::kv_heads * dk,
                               group = C::heads / C::kv_heads, kd = C::kdim, vd = C::vdim;
  static constexpr bool fused = kd == D && vd == D;
  // Rows W_q [D x D] | W_k [kv x kd] | W_v [kv x vd]; the repeated layer's W_k, W_v have D rows.
  std::vector<float> w = emha::test::uniform(D * D + kv * (kd + vd), 31, -0.15f, 0.15f),
                     b = emha::test::uniform(D + 2 * kv, 32, -0.3f, 0.3f),
                     wo = emha::test::uniform(D * D, 33, -0.15f, 0.15f), bo = emha::test::uniform(D, 34),
                     w_all = std::vector<float>(D * (D + kd + vd)), b_all = std::vector<float>(3 * D);

  GroupWeights() {
    // W_q as it is; row j of the repeated W_k (W_v) is the GQA layer's row of K/V head j / dk / group.
    std::memcpy(w_all.data(), w.data(), D * D * sizeof(float));
    std::memcpy(b_all.data(), b.data(), D * sizeof(float));
    for (std::size_t p = 0; p < 2; ++p) {  // K (0) or V (1)
      const std::size_t width = p == 0 ? kd : vd;
      const float* from_w = w.data() + D * D + p * kv * kd;
      float* to_w = w_all.data() + D * D + p * D * kd;
      for (std::size_t j = 0; j < D; ++j) {
        const std::size_t from = (j / dk / group) * dk + j % dk;
        std::memcpy(to_w + j * width, from_w + from * width, width * sizeof(float));
        b_all[D + p * D + j] = b[D + p * kv + from];
      }
    }
  }
  emha::MhaWeights get(bool all_heads) const {
    emha::MhaWeights m;
    const float* base = all_heads ? w_all.data() : w.data();
    const std::size_t kv_rows = all_heads ? D : kv;
    if (fused) {
      m.in_proj_weight = {base, (D + 2 * kv_rows) * D};
    } else {
      m.q_proj_weight = {base, D * D};
      m.k_proj_weight = {base + D * D, kv_rows * kd};
      m.v_proj_weight = {base + D * D + kv_rows * kd, kv_rows * vd};
    }
    m.in_proj_bias = all_heads ? Span<const float>{b_all.data(), b_all.size()} : Span<const float>{b.data(), b.size()};
    m.out_proj_weight = {wo.data(), wo.size()};
    m.out_proj_bias = {bo.data(), bo.size()};
    return m;
  }
};

// A call's masks over its keys: causal; key padding (key k of sequence b is position
// first_key(b) + k: the same positions ignored at every call); with `per_head`, a per-head
// additive mask, a per-head bool mask and a per-batch-head score bias, different for every head
// (the stacked rows must each get their own head's).
struct CallMasks {
  std::unique_ptr<bool[]> ignored, masked;
  std::vector<float> additive, bias;
  emha::ForwardOptions o;

  CallMasks(std::size_t heads, std::size_t batch, std::size_t n, std::size_t keys, const std::size_t* first_key,
            bool per_head, std::uint64_t seed)
      : ignored(new bool[batch * keys]), masked(new bool[heads * n * keys]) {
    o.masks.causal = true;
    for (std::size_t b = 0; b < batch; ++b)
      for (std::size_t k = 0; k < keys; ++k) ignored[b * keys + k] = (first_key[b] + k + 3 * b) % 7 == 2;
    o.masks.key_ignored = {ignored.get(), batch * keys};
    if (!per_head) return;
    additive = emha::test::uniform(heads * n * keys, seed, -0.8f, 0.8f);
    bias = emha::test::uniform(batch * heads * n * keys, seed + 1, -0.5f, 0.5f);
    for (std::size_t i = 0; i < heads * n * keys; ++i) masked[i] = (i * 2654435761u + seed) % 13 == 0;
    o.masks.attn_additive = {additive.data(), additive.size()};
    o.masks.attn_masked = {masked.get(), heads * n * keys};
    o.masks.attn_mask_shape = emha::MaskShape::per_head;
    o.masks.score_bias = {bias.data(), bias.size()};
    o.masks.score_bias_shape = emha::MaskShape::per_batch_head;
  }
};

template <class C>
struct Decoder {
  std::unique_ptr<emha::MultiHeadAttention<C>> mha = std::make_unique<emha::MultiHeadAttention<C>>();
  std::unique_ptr<emha::KvCache<C>> cache = std::make_unique<emha::KvCache<C>>();
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Decodes batch 2 through C (GQA) and AllHeads<C> (per head): calls of calls[i] new tokens each
// (sequence 1 truncated by 3 after the first, so the batch is ragged), comparing the outputs of
// every call bit for bit; and C's forward_reference alongside (the scalar kernels, per head),
// to a float tolerance.
template <class C>
void decode_against_all_heads(const std::vector<std::size_t>& calls, bool per_head_masks) {
  constexpr std::size_t D = C::d_model, B = 2;
  const GroupWeights<C> gw;
  Decoder<C> gqa, ref;
  Decoder<AllHeads<C>> all;
  REQUIRE(gqa.mha->set_weights(gw.get(false)) == Status::ok);
  REQUIRE(ref.mha->set_weights(gw.get(false)) == Status::ok);
  REQUIRE(all.mha->set_weights(gw.get(true)) == Status::ok);
  const auto x = emha::test::uniform(B * 512 * D, 35);
  std::size_t t = 0, steps = 0, crossed = 0;
  double worst = 0;
  for (std::size_t call = 0; call < calls.size(); ++call) {
    const std::size_t n = calls[call], keys = gqa.cache->keys(n, B);
    REQUIRE(keys == all.cache->keys(n, B));
    const std::size_t firsts[B] = {gqa.cache->first_key(0, n), gqa.cache->first_key(1, n)};
    const CallMasks m(C::heads, B, n, keys, firsts, per_head_masks, 100 + call);
    const AttentionShape shape{n, keys, B, emha::Layout::batch_first};
    const Span<const float> xs{x.data() + t * B * D, B * n * D};
    std::vector<float> y_gqa(B * n * D, -7.0f), y_all(B * n * D, -8.0f), y_ref(B * n * D, -9.0f);
    REQUIRE(gqa.mha->forward(shape, xs, {y_gqa.data(), y_gqa.size()}, *gqa.cache, m.o) == Status::ok);
    REQUIRE(all.mha->forward(shape, xs, {y_all.data(), y_all.size()}, *all.cache, m.o) == Status::ok);
    REQUIRE(ref.mha->forward_reference(shape, xs, {y_ref.data(), y_ref.size()}, *ref.cache, m.o) == Status::ok);
    INFO("call " << call << ": " << n << " new tokens, " << keys << " keys");
    CHECK(same_bits(y_gqa, y_all));
    for (std::size_t i = 0; i < y_gqa.size(); ++i) {  // an explicit max: aarch64 GCC 12 vectorized a
      const double e = std::fabs(double(y_gqa[i]) - y_ref[i]) / (1.0 + std::fabs(double(y_ref[i])));
      if (e > worst) worst = e;                        // std::fmax reduction into an internal compiler error
    }
    if (call == 0) {
      for (auto* c : {gqa.cache.get(), ref.cache.get()}) REQUIRE(c->truncate(1, n - 3) == Status::ok);
      REQUIRE(all.cache->truncate(1, n - 3) == Status::ok);
    }
    if (n == 1) {
      ++steps;
      crossed += keys % emha::detail::mha_block_kv == 1;  // the step that opens a key tile
    }
    t += n;
  }
  CHECK(steps > 0);
  CHECK(crossed > 0);
  CHECK(worst < 1e-4);
  CHECK(gqa.mha->arena().high_water() <= emha::MultiHeadAttention<C>::arena_bytes);
  MESSAGE(std::string(emha::simd_isa()) << ": " << steps << " decode steps (" << C::heads << " heads on " << C::kv_heads
          << (std::string(std::string(emha::simd_isa()) == "scalar" ? ", per head" : ", stacked")) << ") identical to the per-head layer's; vs reference "
          << worst);
}

std::vector<std::size_t> schedule(std::initializer_list<std::size_t> chunks, std::size_t steps) {
  std::vector<std::size_t> v(chunks);
  v.insert(v.end(), steps, 1);
  return v;
}

}  // namespace

TEST_CASE("GQA decode: stacked group rows give the per-head bits (8 heads on 2, RoPE)") {
  using C = GroupCfg<192, 8, 2, Position::rope>;  // d_k 24: a vector and a tail on AVX2 and AVX-512
  // Keys 189 .. 195 (a second tile at 193), then 386 .. 392 (a third at 385).
  std::vector<std::size_t> calls = schedule({188}, 7);
  calls.push_back(191);
  calls.insert(calls.end(), 7, 1);
  SUBCASE("key padding") { decode_against_all_heads<C>(calls, false); }
  SUBCASE("key padding and per-head masks") { decode_against_all_heads<C>(calls, true); }
}

TEST_CASE("GQA decode: stacked group rows give the per-head bits (MQA 4 on 1, ALiBi)") {
  using C = GroupCfg<80, 4, 1, Position::alibi>;  // d_k 20; ALiBi's slopes differ per row
  std::vector<std::size_t> calls = schedule({188}, 7);
  calls.push_back(191);
  calls.insert(calls.end(), 7, 1);
  decode_against_all_heads<C>(calls, true);
}

TEST_CASE("GQA decode: stacked group rows give the per-head bits (sliding window, rolling cache)") {
  // W = 200 keys over two tiles from a start that moves; the cache holds 2W = 400 and rolls at
  // position 400 (keeps 199), so steps run before and after a roll.
  SUBCASE("MQA 4 on 1, ALiBi") {
    decode_against_all_heads<GroupCfg<80, 4, 1, Position::alibi, 200>>(schedule({190, 190}, 30), true);
  }
  SUBCASE("GQA 8 on 2, RoPE") {
    decode_against_all_heads<GroupCfg<192, 8, 2, Position::rope, 200>>(schedule({190, 190}, 30), false);
  }
}

TEST_CASE("GQA decode: groups larger than mha_group_rows go in chunks (MQA 8 on 1, 12 on 2)") {
  std::vector<std::size_t> calls = schedule({188}, 7);
  decode_against_all_heads<GroupCfg<128, 8, 1, Position::alibi>>(calls, true);
  decode_against_all_heads<GroupCfg<192, 12, 2, Position::rope>>(calls, true);  // groups of 6: 4 + 2
}

namespace {

// One query token over S_kv static keys (no cache, no positions): the stacked path as well, on
// layer L (C, or AllHeads<C> with the repeated weights), or with `reference` the scalar kernels
// head by head. Batch 2, key lengths and a per-head additive mask. Over 1100 keys a one-query call
// goes in chunks of mha_split_keys (768 at 384): sequence 1 holds 700 keys, so its last chunk is
// all masked.
template <class C, class L = C>
std::vector<float> one_query(std::size_t keys, bool reference = false) {
  constexpr std::size_t D = C::d_model, B = 2;
  const GroupWeights<C> gw;
  auto mha = std::make_unique<emha::MultiHeadAttention<L>>();
  REQUIRE(mha->set_weights(gw.get(L::kv_heads != C::kv_heads)) == Status::ok);
  static_assert(C::kdim == C::vdim, "one tensor holds the keys and the values");
  const auto q = emha::test::uniform(B * D, 36), kv = emha::test::uniform(B * keys * C::kdim, 37);
  const auto additive = emha::test::uniform(C::heads * keys, 38, -0.5f, 0.5f);
  const std::size_t lengths[B] = {keys, keys - 400};
  emha::ForwardOptions o;
  o.masks.key_lengths = {lengths, B};
  o.masks.attn_additive = {additive.data(), additive.size()};
  o.masks.attn_mask_shape = emha::MaskShape::per_head;
  std::vector<float> y(B * D, -7.0f);
  const Span<const float> qs{q.data(), q.size()}, kvs{kv.data(), kv.size()};
  const AttentionShape shape{1, keys, B, emha::Layout::batch_first};
  if (reference)
    REQUIRE(mha->forward_reference(shape, qs, kvs, kvs, {y.data(), y.size()}, o) == Status::ok);
  else
    REQUIRE(mha->forward(shape, qs, kvs, kvs, {y.data(), y.size()}, o) == Status::ok);
  CHECK(mha->arena().high_water() <= emha::MultiHeadAttention<L>::arena_bytes);
  return y;
}

}  // namespace

// The stacked path against the per-head oracle, then on 2 and 3 threads: the same bits; and
// against the scalar reference, to float rounding (the per-head reference sums every key in one
// online pass, not in chunks). Keys and values 64 wide: their projections, not what is under test,
// cost a sixteenth of what d_model-wide inputs would (most of this case's time under qemu).
template <std::size_t KV, std::size_t keys, std::size_t Threads>
using ThreadsCfg = KvWidth<GroupCfg<1024, 16, KV, Position::none, 0, 1, keys, Threads>, 64>;

template <std::size_t KV, std::size_t keys>
void same_bits_on_threads() {
  using C1 = ThreadsCfg<KV, keys, 1>;
  const auto one = one_query<C1>(keys);
  const auto ref = one_query<C1>(keys, true);
  double worst = 0;
  for (std::size_t i = 0; i < one.size(); ++i)
    worst = std::max(worst, std::fabs(double(one[i]) - ref[i]) / (1.0 + std::fabs(double(ref[i]))));
  CHECK(worst < 1e-4);  // the bar of decode_against_all_heads; the unsplit path's own here: 1.1e-5
  CHECK(same_bits(one, one_query<C1, AllHeads<C1>>(keys)));
  CHECK(same_bits(one, one_query<ThreadsCfg<KV, keys, 2>>(keys)));
  CHECK(same_bits(one, one_query<ThreadsCfg<KV, keys, 3>>(keys)));
}

TEST_CASE("GQA one query token: stacked groups give the per-head bits on any number of threads") {
  REQUIRE(emha::port::start_workers(2) == 2);
  // D = 1024 over 1100 keys: 4 * 1100 * 1024 FLOPs, over mha_min_parallel_flops, so the stage is
  // split: MQA's one group into parts (one per task), GQA's four groups over the tasks. S_q <= 1:
  // the arena's slot holds the stacked group (mha_slot_bytes), not only one query row.
  SUBCASE("MQA 16 on 1") { same_bits_on_threads<1, 1100>(); }
  SUBCASE("GQA 16 on 4") { same_bits_on_threads<4, 1100>(); }
}

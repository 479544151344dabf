// SPDX-License-Identifier: Apache-2.0
// Threads (emha::port::parallel_for, Config::max_threads): every item runs once, and a forward
// pass split over workers gives the same bits as one thread, on every path and mask.

#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "emha/emha.hpp"

namespace {

template <std::size_t Threads, bool Prepack = true>
struct Cfg : emha::MhaConfig<256, 8, 128> {
  static constexpr std::size_t max_batch = 2;
  static constexpr std::size_t max_threads = Threads;
  static constexpr bool prepack_weights = Prepack;
};

struct Data {
  static constexpr std::size_t D = 256, S = 128, B = 2;
  std::vector<float> in_w = random(3 * D * D, 0.06f), in_b = random(3 * D, 0.5f),
                     out_w = random(D * D, 0.06f), out_b = random(D, 0.5f), x = random(B * S * D, 1.0f),
                     additive = random(S * S, 0.5f);
  std::vector<std::size_t> lengths{S, S - 37};

  static std::vector<float> random(std::size_t n, float scale) {
    static std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-scale, scale);
    std::vector<float> v(n);
    for (float& f : v) f = u(rng);
    return v;
  }
  emha::MhaWeights weights() const {
    emha::MhaWeights w;
    w.in_proj_weight = {in_w.data(), in_w.size()};
    w.in_proj_bias = {in_b.data(), in_b.size()};
    w.out_proj_weight = {out_w.data(), out_w.size()};
    w.out_proj_bias = {out_b.data(), out_b.size()};
    return w;
  }
};

struct Result {
  std::vector<float> out, attn;
};

// One forward (or forward_reference) of layer type M over `d` with the options a case names.
template <class M>
Result run(const Data& d, int options_case, bool reference = false) {
  auto mha = std::make_unique<M>();
  REQUIRE(mha->set_weights(d.weights()) == emha::Status::ok);
  const emha::AttentionShape shape{Data::S, Data::S, Data::B, emha::Layout::batch_first};
  Result r{std::vector<float>(Data::B * Data::S * Data::D, -1.0f), {}};
  emha::ForwardOptions o;
  if (options_case >= 1) {  // causal, key lengths, an additive mask
    o.masks.causal = true;
    o.masks.key_lengths = {d.lengths.data(), d.lengths.size()};
    o.masks.attn_additive = {d.additive.data(), d.additive.size()};
  }
  if (options_case >= 2) {  // attention weights out: averaged (2) or per head (3)
    o.average_attn_weights = options_case == 2;
    r.attn.assign(Data::B * Data::S * Data::S * (o.average_attn_weights ? 1 : 8), -1.0f);
    o.attn_weights = {r.attn.data(), r.attn.size()};
  }
  const emha::Span<const float> x{d.x.data(), d.x.size()};
  const emha::Span<float> out{r.out.data(), r.out.size()};
  const auto s = reference ? mha->forward_reference(shape, x, x, x, out, o)
                           : mha->forward(shape, x, x, x, out, o);
  REQUIRE(s == emha::Status::ok);
  CHECK(mha->arena().high_water() <= M::arena_bytes);
  return r;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  // Empty (no attention weights asked): equal, and memcmp is never given a null pointer.
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

}  // namespace

TEST_CASE("parallel_for runs every item exactly once, on the started workers") {
  const std::size_t workers = emha::port::start_workers(2);
  CHECK(workers == 2);
  CHECK(emha::port::workers() == 2);
  CHECK(emha::port::start_workers(4) == 2);  // once, at init
  for (std::size_t items : {0u, 1u, 2u, 3u, 17u, 1000u}) {
    std::vector<std::atomic<int>> runs(items);
    emha::port::parallel_for(items, 2, [](void* c, std::size_t i, std::size_t slot) noexcept {
      if (slot < 2) (*static_cast<std::vector<std::atomic<int>>*>(c))[i].fetch_add(1);
    }, &runs);
    std::size_t once = 0;
    for (auto& r : runs) once += r.load() == 1;
    CHECK(once == items);
  }
}

TEST_CASE("a forward split over threads gives the bits of one thread") {
  REQUIRE(emha::port::start_workers(2) == 2);
  const Data d;
  for (int options_case = 0; options_case < 4; ++options_case) {
    CAPTURE(options_case);  // 0 plain, 1 masks, 2 averaged weights, 3 per-head weights
    const Result one = run<emha::MultiHeadAttention<Cfg<1>>>(d, options_case);
    const Result two = run<emha::MultiHeadAttention<Cfg<2>>>(d, options_case);
    const Result three = run<emha::MultiHeadAttention<Cfg<3>>>(d, options_case);  // slots > workers
    const Result in_place = run<emha::MultiHeadAttention<Cfg<2, false>>>(d, options_case);
    CHECK(same_bits(one.out, two.out));
    CHECK(same_bits(one.out, three.out));
    CHECK(same_bits(one.out, in_place.out));
    CHECK(same_bits(one.attn, two.attn));
    CHECK(same_bits(one.attn, three.attn));
    CHECK(same_bits(one.attn, in_place.attn));
    // The threaded result is the layer's, not a copy of a wrong one: its reference agrees.
    const Result ref = run<emha::MultiHeadAttention<Cfg<2>>>(d, options_case, true);
    const Result ref_one = run<emha::MultiHeadAttention<Cfg<1>>>(d, options_case, true);
    CHECK(same_bits(ref.out, ref_one.out));
    double worst = 0;
    for (std::size_t i = 0; i < one.out.size(); ++i) {
      const double e = std::abs(double(two.out[i]) - ref.out[i]) / (1.0 + std::abs(double(ref.out[i])));
      worst = e > worst ? e : worst;
    }
    CHECK(worst < 1e-5);
  }
}

// SPDX-License-Identifier: Apache-2.0
// Wall time of forward() and of a decode step on N workers, optionally beside a busy thread that
// keeps one core occupied (a board's application, a neighbour process): the pool must degrade
// gracefully (ports/posix/thread_pool.cpp). One process per worker count (workers start once).
//   emha_worker_scaling WORKERS [busy]
// prints "<case> <median us>" per case, medians of 41 timed runs of a few calls each, and checks
// that every run gave one thread's bits.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "emha/emha.hpp"

namespace {

template <std::size_t D, std::size_t H, std::size_t S, std::size_t Kv = S, std::size_t KvHeads = H>
struct Cfg : emha::MhaConfig<D, H, S, Kv> {
  static constexpr std::size_t kv_heads = KvHeads;
  static constexpr std::size_t max_threads = 16;
  static constexpr bool attention_weights = false;
};

std::vector<float> random(std::size_t n, float scale, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& f : v) f = u(rng);
  return v;
}

template <class Fn>
double median_us(Fn&& fn, int calls) {
  std::vector<double> t;
  for (int r = 0; r < 41; ++r) {
    const auto a = std::chrono::steady_clock::now();
    for (int k = 0; k < calls; ++k) fn();
    t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a).count() / calls);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Weights {
  std::vector<float> in_w, in_b, out_w, out_b;
  emha::MhaWeights view() const {
    emha::MhaWeights w;
    w.in_proj_weight = {in_w.data(), in_w.size()};
    w.in_proj_bias = {in_b.data(), in_b.size()};
    w.out_proj_weight = {out_w.data(), out_w.size()};
    w.out_proj_bias = {out_b.data(), out_b.size()};
    return w;
  }
};
// d_model d, K and V kv_dim wide each (d without GQA).
Weights weights(std::size_t d, std::size_t kv_dim) {
  const float s = 1.0f / float(d);
  const std::size_t rows = d + 2 * kv_dim;
  return {random(rows * d, s, 1), random(rows, 0.1f, 2), random(d * d, s, 3), random(d, 0.1f, 4)};
}

// A forward at (S, D, H); returns false when its bits change between calls.
template <std::size_t D, std::size_t H, std::size_t S>
bool forward_case(const char* name) {
  using C = Cfg<D, H, S>;
  const Weights w = weights(D, D);
  auto m = std::make_unique<emha::MultiHeadAttention<C>>();
  if (m->set_weights(w.view()) != emha::Status::ok) return false;
  const std::vector<float> x = random(S * D, 1.0f, 5);
  std::vector<float> y(S * D), first(S * D);
  const emha::AttentionShape shape{S, S, 1};
  const emha::Span<const float> in{x.data(), x.size()};
  bool same = m->forward(shape, in, in, in, {first.data(), first.size()}) == emha::Status::ok;
  const double us = median_us([&] { m->forward(shape, in, in, in, {y.data(), y.size()}); }, 3);
  same = same && std::memcmp(y.data(), first.data(), y.size() * sizeof(float)) == 0;
  std::printf("%s %.1f\n", name, us);
  return same;
}

// One token over a KvCache holding `held` positions (D, H, KvHeads K/V heads): the step is
// repeated on the same cache state (the cache's length is reset), so every step reads `held`
// positions.
template <std::size_t D, std::size_t H, std::size_t Held, std::size_t KvHeads = H>
bool decode_case(const char* name) {
  using C = Cfg<D, H, 1, Held + 1, KvHeads>;
  const Weights w = weights(D, D / H * KvHeads);
  auto m = std::make_unique<emha::MultiHeadAttention<C>>();
  auto cache = std::make_unique<emha::KvCache<C>>();
  if (m->set_weights(w.view()) != emha::Status::ok) return false;
  const std::vector<float> x = random((Held + 1) * D, 1.0f, 6);
  std::vector<float> y(D), first(D);
  emha::ForwardOptions o;
  o.masks.causal = true;
  for (std::size_t p = 0; p < Held; ++p)
    if (m->forward({1, p + 1, 1}, {x.data() + p * D, D}, {y.data(), D}, *cache, o) != emha::Status::ok) return false;
  const auto step = [&](float* out) {
    const emha::Status s = m->forward({1, Held + 1, 1}, {x.data() + Held * D, D}, {out, D}, *cache, o);
    cache->truncate(0, Held);
    return s;
  };
  bool same = step(first.data()) == emha::Status::ok;
  const double us = median_us([&] { step(y.data()); }, 20);
  same = same && std::memcmp(y.data(), first.data(), y.size() * sizeof(float)) == 0;
  std::printf("%s %.1f\n", name, us);
  return same;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: emha_worker_scaling WORKERS [busy]\n");
    return 2;
  }
  const std::size_t workers = emha::port::start_workers(std::strtoul(argv[1], nullptr, 10));
  std::atomic<bool> stop{false};
  std::thread busy;
  if (argc > 2 && std::strcmp(argv[2], "busy") == 0)
    busy = std::thread([&stop] {
      volatile unsigned long spin = 0;
      while (!stop.load(std::memory_order_relaxed)) spin = spin + 1;
    });
  std::printf("workers %zu\n", workers);
  bool ok = forward_case<256, 8, 128>("forward_128_256_8");
  ok = forward_case<512, 8, 256>("forward_256_512_8") && ok;
  ok = decode_case<512, 8, 2048>("decode_2048_512_8") && ok;
  ok = decode_case<512, 8, 2048, 1>("decode_2048_512_8_mqa") && ok;
  stop = true;
  if (busy.joinable()) busy.join();
  if (!ok) std::fprintf(stderr, "emha_worker_scaling: an error, or bits that changed between calls\n");
  return ok ? 0 : 1;
}

// SPDX-License-Identifier: Apache-2.0
// The posix pool against the machine it runs on (ports/posix/thread_pool.cpp). With WORKERS
// started, every case times three things in turn, block by block, so that a neighbour's load
// drifting over seconds falls on all three alike:
//   pool:    one call on the pool (a Config with max_threads 16),
//   one:     the same call on the caller alone (max_threads 1, the workers left idle),
//   machine: two single-thread copies of that call at once, one on the caller and one on a thread
//            of its own: what this machine gives two threads of the same work right now
//            (2 x one when both get a whole core; more where they share a core, a cache, a bus,
//            or where a neighbour holds one). Forwards only, and not beside the busy thread: two
//            decode steps read twice the bytes the pool's one step reads.
// A neighbour may run beside them all the time:
//   busy:    a thread that spins without a pause (a board's application, a neighbour),
//   bursty:  a thread that spins for 1-20 ms, sleeps for 1-20 ms, and again (uniform, seeded):
//            intermittent load, where a pool must keep using the core whenever it is free.
// The copies are timed in both modes, so each bar compares with the machine of the same moments.
//   emha_worker_scaling WORKERS [busy|bursty]      (EMHA_WORKER_BLOCKS=N: N blocks, a short run)
// prints "workers N", then "<case> <pool us> <one us> <machine us>" per case, per call (machine 0
// when skipped): medians of 41 blocks of a few calls each, or with `bursty` means of 201 (under
// bursts the time per call has two modes, and the mean is the throughput), and fails when a
// call's bits differ from the first one-thread call's (the pool must give one thread's bits).

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

template <std::size_t D, std::size_t H, std::size_t S, std::size_t Kv, std::size_t KvHeads, std::size_t Threads>
struct Cfg : emha::MhaConfig<D, H, S, Kv> {
  static constexpr std::size_t kv_heads = KvHeads;
  static constexpr std::size_t max_threads = Threads;
  static constexpr bool attention_weights = false;
};

std::vector<float> random(std::size_t n, float scale, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& f : v) f = u(rng);
  return v;
}

using Clock = std::chrono::steady_clock;
double us_since(Clock::time_point a, int calls) {
  return std::chrono::duration<double, std::micro>(Clock::now() - a).count() / calls;
}
// The pause before each timed block: the pool's idle workers go back to sleep.
void rest() { std::this_thread::sleep_for(std::chrono::milliseconds(1)); }

// The caller's and a second thread's copies of `calls` calls, started together after one untimed
// call each: the slower's time per call.
template <class Fn1, class Fn2>
double both_us(Fn1&& a, Fn2&& b, int calls) {
  std::atomic<int> ready{0};
  double other = 0;
  const auto timed = [&](auto& fn) {
    fn();
    ready.fetch_add(1);
    while (ready.load() < 2) {
    }
    const auto t = Clock::now();
    for (int k = 0; k < calls; ++k) fn();
    return us_since(t, calls);
  };
  std::thread second([&] { other = timed(b); });
  const double mine = timed(a);
  second.join();
  return std::max(mine, other);
}

// How the blocks are summarized (the mode's comment above).
struct Summary {
  int blocks = 41;
  bool mean = false;
  double of(std::vector<double> v) const {
    if (mean) {
      double sum = 0;
      for (double x : v) sum += x;
      return sum / double(v.size());
    }
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }
};
Summary g_summary;

// Times pool(), one() and both copies (one() with one2()) in turn, block by block, each block
// after a millisecond's pause (the pool's workers go back to sleep) and one untimed call (which
// wakes them: a block measures the steady state, as the calls of a sequence run).
template <class Pool, class One, class One2>
void measure(const char* name, Pool&& pool, One&& one, One2&& one2, int calls, bool machine) {
  std::vector<double> tp, t1, tm;
  const auto block = [calls](auto& fn) {
    rest();
    fn();
    const auto t = Clock::now();
    for (int k = 0; k < calls; ++k) fn();
    return us_since(t, calls);
  };
  for (int r = 0; r < g_summary.blocks; ++r) {
    tp.push_back(block(pool));
    t1.push_back(block(one));
    if (machine) {
      rest();
      tm.push_back(both_us(one, one2, calls));
    }
  }
  std::printf("%s %.1f %.1f %.1f\n", name, g_summary.of(tp), g_summary.of(t1), machine ? g_summary.of(tm) : 0.0);
  std::fflush(stdout);
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

bool same(const std::vector<float>& a, const std::vector<float>& b) {
  return std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// A forward at (S, D, H); returns false on an error or when any call's bits differ from the
// first one-thread call's.
template <std::size_t D, std::size_t H, std::size_t S>
bool forward_case(const char* name, bool machine) {
  const Weights w = weights(D, D);
  auto pool = std::make_unique<emha::MultiHeadAttention<Cfg<D, H, S, S, H, 16>>>();
  auto one = std::make_unique<emha::MultiHeadAttention<Cfg<D, H, S, S, H, 1>>>();
  auto one2 = std::make_unique<emha::MultiHeadAttention<Cfg<D, H, S, S, H, 1>>>();
  bool ok = pool->set_weights(w.view()) == emha::Status::ok && one->set_weights(w.view()) == emha::Status::ok &&
            one2->set_weights(w.view()) == emha::Status::ok;
  const std::vector<float> x = random(S * D, 1.0f, 5);
  std::vector<float> first(S * D), yp(S * D), y1(S * D), y2(S * D);
  const emha::AttentionShape shape{S, S, 1};
  const emha::Span<const float> in{x.data(), x.size()};
  // call(model, y, ok): one forward into y; ok turns false on an error (one flag per thread).
  const auto call = [&](auto& m, std::vector<float>& y, bool& good) {
    good = m->forward(shape, in, in, in, {y.data(), y.size()}) == emha::Status::ok && good;
  };
  bool ok_pool = true, ok_one = true, ok_one2 = true;
  call(one, first, ok_one);
  measure(name, [&] { call(pool, yp, ok_pool); }, [&] { call(one, y1, ok_one); }, [&] { call(one2, y2, ok_one2); },
          3, machine);
  return ok && ok_pool && ok_one && ok_one2 && same(yp, first) && same(y1, first) && (!machine || same(y2, first));
}

// One token over a KvCache holding `held` positions (D, H, KvHeads K/V heads): the step is
// repeated on the same cache state (the cache's length is reset), so every step reads `held`
// positions.
template <std::size_t D, std::size_t H, std::size_t Held, std::size_t KvHeads, std::size_t Threads>
struct Decoder {
  using C = Cfg<D, H, 1, Held + 1, KvHeads, Threads>;
  std::unique_ptr<emha::MultiHeadAttention<C>> m = std::make_unique<emha::MultiHeadAttention<C>>();
  std::unique_ptr<emha::KvCache<C>> cache = std::make_unique<emha::KvCache<C>>();
  emha::ForwardOptions o;
  bool ok = true;

  Decoder(const Weights& w, const std::vector<float>& x) {
    o.masks.causal = true;
    ok = m->set_weights(w.view()) == emha::Status::ok;
    std::vector<float> y(D);
    for (std::size_t p = 0; p < Held; ++p)
      ok = ok && m->forward({1, p + 1, 1}, {x.data() + p * D, D}, {y.data(), D}, *cache, o) == emha::Status::ok;
  }
  void step(const std::vector<float>& x, std::vector<float>& y) {
    ok = m->forward({1, Held + 1, 1}, {x.data() + Held * D, D}, {y.data(), D}, *cache, o) == emha::Status::ok && ok;
    cache->truncate(0, Held);
  }
};

template <std::size_t D, std::size_t H, std::size_t Held, std::size_t KvHeads = H>
bool decode_case(const char* name) {
  const Weights w = weights(D, D / H * KvHeads);
  const std::vector<float> x = random((Held + 1) * D, 1.0f, 6);
  Decoder<D, H, Held, KvHeads, 16> pool(w, x);
  Decoder<D, H, Held, KvHeads, 1> one(w, x);
  std::vector<float> first(D), yp(D), y1(D);
  one.step(x, first);
  measure(name, [&] { pool.step(x, yp); }, [&] { one.step(x, y1); }, [] {}, 20, false);
  return pool.ok && one.ok && same(yp, first) && same(y1, first);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: emha_worker_scaling WORKERS [busy|bursty]\n");
    return 2;
  }
  const std::size_t workers = emha::port::start_workers(std::strtoul(argv[1], nullptr, 10));
  const char* mode = argc > 2 ? argv[2] : "";
  const bool busy_thread = std::strcmp(mode, "busy") == 0, bursty = std::strcmp(mode, "bursty") == 0;
  if (bursty) g_summary = Summary{201, true};
  if (const char* blocks = std::getenv("EMHA_WORKER_BLOCKS")) g_summary.blocks = std::max(1, std::atoi(blocks));
  std::atomic<bool> stop{false};
  std::thread neighbour;
  if (busy_thread)
    neighbour = std::thread([&stop] {
      volatile unsigned long spin = 0;
      while (!stop.load(std::memory_order_relaxed)) spin = spin + 1;
    });
  if (bursty)
    neighbour = std::thread([&stop] {
      std::mt19937 rng(11);
      std::uniform_int_distribution<int> ms(1, 20);
      volatile unsigned long spin = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        const auto until = Clock::now() + std::chrono::milliseconds(ms(rng));
        while (Clock::now() < until) spin = spin + 1;
        std::this_thread::sleep_for(std::chrono::milliseconds(ms(rng)));
      }
    });
  std::printf("workers %zu\n", workers);
  const bool machine = !busy_thread;
  bool ok = forward_case<256, 8, 128>("forward_128_256_8", machine);
  ok = forward_case<512, 8, 256>("forward_256_512_8", machine) && ok;
  ok = decode_case<512, 8, 2048>("decode_2048_512_8") && ok;
  ok = decode_case<512, 8, 2048, 1>("decode_2048_512_8_mqa") && ok;
  stop = true;
  if (neighbour.joinable()) neighbour.join();
  if (!ok) std::fprintf(stderr, "emha_worker_scaling: an error, or bits that differ from one thread's\n");
  return ok ? 0 : 1;
}

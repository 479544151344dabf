// SPDX-License-Identifier: Apache-2.0
// The posix pool's properties, none of them timed (ports/posix/thread_pool.cpp):
//   - start_workers clamps its request to the CPUs the process may use and starts once;
//   - parallel_for runs every item once, in a slot below the job's thread count, and no two
//     items running at the same time share a slot; calls back to back never mix their items;
//   - a worker parked in the middle of a call (the pool's test hook, pool_testing.hpp) stops
//     neither that call nor the next ones from finishing on the others, and takes part again
//     once released;
//   - forward() and a KvCache decode step give one thread's bits, parked worker or not;
//   - with the heap gate (where built: not under a sanitizer), a call on the workers allocates
//     nothing.
// ctest runs it once per worker count (EMHA_POOL_WORKERS: 1, 2, 3 and twice the CPUs): a
// process starts its workers once.

#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "emha/emha.hpp"
#include "pool_testing.hpp"
#if EMHA_POOL_HEAP_GATE
#include "no_heap/heap_gate.hpp"
#endif

namespace {

std::size_t g_asked = 1;    // EMHA_POOL_WORKERS
std::size_t g_workers = 1;  // what start_workers gave

std::size_t usable_cpus() {
  cpu_set_t set;
  REQUIRE(sched_getaffinity(0, sizeof set, &set) == 0);
  return std::size_t(CPU_COUNT(&set));
}

// Per item: how often it ran and in which slot; per slot: whether an item runs in it now.
struct Record {
  std::vector<std::atomic<int>> runs;
  std::vector<std::atomic<std::size_t>> slot_of;
  std::atomic<bool> busy[256] = {};
  std::atomic<int> shared{0};  // items that found their slot in use
  std::size_t threads = 1;
  int sleep_us = 0;

  explicit Record(std::size_t items) : runs(items), slot_of(items) {}
  static void task(void* context, std::size_t i, std::size_t slot) noexcept {
    Record& r = *static_cast<Record*>(context);
    if (slot >= r.threads || slot >= 256 || r.busy[slot].exchange(true)) {
      r.shared.fetch_add(1);
      return;
    }
    if (r.sleep_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(r.sleep_us));
    r.runs[i].fetch_add(1);
    r.slot_of[i].store(slot);
    r.busy[slot].store(false);
  }
  // Items that ran exactly once.
  std::size_t once() const {
    std::size_t n = 0;
    for (const auto& r : runs) n += r.load() == 1;
    return n;
  }
  bool ran_off_caller(std::size_t slot) const {
    for (const auto& s : slot_of)
      if (s.load() == slot) return true;
    return false;
  }
};

// One parallel_for of `items` on up to `threads` threads, checked.
void check_call(std::size_t items, std::size_t threads, int sleep_us = 0) {
  Record r(items);
  r.threads = threads;
  r.sleep_us = sleep_us;
  emha::port::parallel_for(items, threads, Record::task, &r);
  CHECK(r.shared.load() == 0);
  CHECK(r.once() == items);
}

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

struct Weights {
  std::vector<float> in_w, in_b, out_w, out_b;
  Weights(std::size_t d, std::size_t kv_dim)
      : in_w(random((d + 2 * kv_dim) * d, 1.0f / float(d), 1)), in_b(random(d + 2 * kv_dim, 0.1f, 2)),
        out_w(random(d * d, 1.0f / float(d), 3)), out_b(random(d, 0.1f, 4)) {}
  emha::MhaWeights view() const {
    emha::MhaWeights w;
    w.in_proj_weight = {in_w.data(), in_w.size()};
    w.in_proj_bias = {in_b.data(), in_b.size()};
    w.out_proj_weight = {out_w.data(), out_w.size()};
    w.out_proj_bias = {out_b.data(), out_b.size()};
    return w;
  }
};

// A causal forward at (S, D, H) on `Threads` threads: its bits.
template <std::size_t Threads>
std::vector<float> forward(const Weights& w, const std::vector<float>& x) {
  constexpr std::size_t D = 256, H = 8, S = 96;
  auto m = std::make_unique<emha::MultiHeadAttention<Cfg<D, H, S, S, H, Threads>>>();
  REQUIRE(m->set_weights(w.view()) == emha::Status::ok);
  std::vector<float> y(S * D, -1.0f);
  emha::ForwardOptions o;
  o.masks.causal = true;
  const emha::Span<const float> in{x.data(), S * D};
  REQUIRE(m->forward({S, S, 1}, in, in, in, {y.data(), y.size()}, o) == emha::Status::ok);
  return y;
}

// Decode steps through a KvCache of `Held` positions (MQA when KvHeads is 1), on `Threads`
// threads: the last step's bits. Long enough to split its keys into chunks.
template <std::size_t KvHeads, std::size_t Threads>
std::vector<float> decode(const std::vector<float>& x) {
  constexpr std::size_t D = 128, H = 4, Held = 520;
  using C = Cfg<D, H, 1, Held + 1, KvHeads, Threads>;
  const Weights w(D, D / H * KvHeads);
  auto m = std::make_unique<emha::MultiHeadAttention<C>>();
  auto cache = std::make_unique<emha::KvCache<C>>();
  REQUIRE(m->set_weights(w.view()) == emha::Status::ok);
  emha::ForwardOptions o;
  o.masks.causal = true;
  std::vector<float> y(D, -1.0f);
  for (std::size_t p = 0; p <= Held; ++p)
    REQUIRE(m->forward({1, p + 1, 1}, {x.data() + p * D, D}, {y.data(), D}, *cache, o) == emha::Status::ok);
  return y;
}

bool same(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Forwards and decode steps on 16 threads give one thread's bits.
void check_bits() {
  const Weights w(256, 256);
  const std::vector<float> x = random(96 * 256, 1.0f, 5), xd = random(521 * 128, 1.0f, 6);
  CHECK(same(forward<16>(w, x), forward<1>(w, x)));
  CHECK(same(forward<3>(w, x), forward<1>(w, x)));
  CHECK(same(decode<4, 16>(xd), decode<4, 1>(xd)));
  CHECK(same(decode<1, 16>(xd), decode<1, 1>(xd)));
}

}  // namespace

TEST_CASE("start_workers clamps to the usable CPUs and starts once") {
  const std::size_t cpus = usable_cpus();
  CHECK(g_workers == std::min({g_asked < 1 ? std::size_t(1) : g_asked, cpus, std::size_t(256)}));
  CHECK(emha::port::workers() == g_workers);
  if (g_workers > 1) CHECK(emha::port::start_workers(g_asked + 1) == g_workers);  // 1: none started yet
}

TEST_CASE("parallel_for runs every item once, in its own slot") {
  for (std::size_t items : {0u, 1u, 2u, 3u, 17u, 1000u, 4095u, 4096u, 5000u})
    for (std::size_t threads : {1u, 2u, 3u, 16u}) {
      CAPTURE(items);
      CAPTURE(threads);
      check_call(items, threads);
    }
  for (int k = 0; k < 200; ++k) check_call(64, 16);
  check_call(40, 16, 200);  // items long enough that every worker wakes for them
}

// Calls back to back whose item counts differ: every item of every call runs once, with its
// own call's context. A thread that still held the last call's word (every item taken) while the
// next call's fields were written could take an item the last call did not have, with either
// call's context, and count it in the next call's `done`: that call then never returned.
TEST_CASE("calls back to back of different sizes: every item once, with its own call's context") {
  struct Tally {
    std::size_t items = 0;
    std::atomic<int> runs[16] = {};
    std::atomic<int> stray{0};  // items at or past `items`
  };
  Tally tallies[2];
  std::size_t wrong = 0;
  for (std::size_t k = 0; k < 200000; ++k) {
    Tally& t = tallies[k % 2];
    t.items = 2 + (k * 7) % 15;  // 2 .. 16, a different count from the last call's
    for (auto& r : t.runs) r.store(0);
    emha::port::parallel_for(t.items, 16, [](void* context, std::size_t i, std::size_t) noexcept {
      Tally& c = *static_cast<Tally*>(context);
      if (i < c.items) c.runs[i].fetch_add(1); else c.stray.fetch_add(1);
    }, &t);
    for (std::size_t i = 0; i < t.items; ++i) wrong += t.runs[i].load() != 1;
  }
  CHECK(wrong == 0);
  CHECK(tallies[0].stray.load() == 0);
  CHECK(tallies[1].stray.load() == 0);
}

TEST_CASE("forward and decode steps give one thread's bits") { check_bits(); }

TEST_CASE("a worker parked in the middle of a call stops neither that call nor the next") {
  if (g_workers < 2) return;
  const std::size_t w = g_workers - 1;  // the last worker
  emha::port::testing::park_worker(w);
  // Calls of items long enough that the worker wakes and comes to a claim point.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!emha::port::testing::worker_parked(w) && std::chrono::steady_clock::now() < deadline)
    check_call(2 * g_workers, g_workers, 300);
  REQUIRE(emha::port::testing::worker_parked(w));
  for (int k = 0; k < 100; ++k) {
    Record r(64);
    r.threads = g_workers;
    emha::port::parallel_for(64, g_workers, Record::task, &r);
    CHECK(r.once() == 64);
    CHECK(r.shared.load() == 0);
    CHECK_FALSE(r.ran_off_caller(w));
  }
  check_bits();
  CHECK(emha::port::testing::worker_parked(w));
  emha::port::testing::unpark_workers();
  // Released, it takes items again.
  bool took = false;
  while (!took && std::chrono::steady_clock::now() < deadline) {
    Record r(2 * g_workers);
    r.threads = g_workers;
    r.sleep_us = 300;
    emha::port::parallel_for(2 * g_workers, g_workers, Record::task, &r);
    CHECK(r.once() == 2 * g_workers);
    took = r.ran_off_caller(w);
  }
  CHECK(took);
}

#if EMHA_POOL_HEAP_GATE
TEST_CASE("a call on the workers allocates nothing") {
  const Weights w(256, 256);
  const std::vector<float> x = random(96 * 256, 1.0f, 5);
  constexpr std::size_t D = 256, H = 8, S = 96;
  auto m = std::make_unique<emha::MultiHeadAttention<Cfg<D, H, S, S, H, 16>>>();
  REQUIRE(m->set_weights(w.view()) == emha::Status::ok);
  std::vector<float> y(S * D);
  const emha::Span<const float> in{x.data(), S * D};
  Record r(64);
  r.threads = 16;
  heap_gate::arm();
  const emha::Status s = m->forward({S, S, 1}, in, in, in, {y.data(), y.size()});
  emha::port::parallel_for(64, 16, Record::task, &r);
  const std::size_t attempts = heap_gate::disarm();
  CHECK(s == emha::Status::ok);
  CHECK(attempts == 0);
  CHECK(r.once() == 64);
}
#endif

int main(int argc, char** argv) {
  const char* asked = std::getenv("EMHA_POOL_WORKERS");
  g_asked = asked ? std::strtoul(asked, nullptr, 10) : 2;
  g_workers = emha::port::start_workers(g_asked);
  doctest::Context context(argc, argv);
  return context.run();
}

// SPDX-License-Identifier: Apache-2.0
// POSIX port: parallel_for over a fixed set of worker threads (emha/port.hpp).
// The application calls start_workers(n) once at init: n - 1 threads are created (the only
// allocations here: their stacks and std::thread's state) and live until the process ends; n is
// clamped to the CPUs the process may run on (its affinity mask). The caller is thread 0, worker
// w is thread w: a call's `slot` is the thread's number, so no two calls running at once share it.
//
// A parallel_for publishes one job (task function, context, item count) as a new value of the
// 32-bit `claim` word: generation (12 bits), the job's thread count - 1 (8 bits) and the next item
// (12 bits; 32-bit atomics are lock-free on every ARM Linux core, armv6 included, 64-bit ones
// not). The caller and the workers take items one at a time by compare-and-swap on that word, so
// a thread holding a word of an older job cannot take an item of the new one, and a thread whose
// number is not below the job's thread count takes none. If the generation wrapped around to the
// very same word, the claim is a valid one of the current job: same item, same thread count (the
// item is checked against the job's count again after the claim). A job of more than 4095 items
// runs on the caller.
//
// Nothing waits for a thread that has taken no item: a worker that is asleep, descheduled or
// parked when a job starts costs the job nothing, the caller runs whatever nobody took. The caller
// waits only for items taken and still running: it polls for spin_ns, then sleeps until the last
// one ends. Sleeping, not yielding, frees its core, so the scheduler can move the thread it waits
// for there (a neighbour process that took that thread's core in a burst). There is no fallback
// to running jobs serially: under intermittent load the pool goes on using every core it gets.
//
// Waiting is bounded by time, not by a count of polls (a `pause` costs a few cycles on some cores
// and over a hundred on others): a worker polls for a new job for spin_ns, then yields its core
// for yield_ns more, then sleeps on a condition variable. Attention calls parallel_for a few times
// per sequence, microseconds apart: a short spin saves a futex wake-up per call.

#include <sched.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <new>
#include <thread>

#include "emha/port.hpp"
#include "pool_testing.hpp"

namespace emha::port {
namespace {

constexpr std::size_t max_threads = 256;
// The claim word: generation | threads - 1 | next item.
constexpr std::uint32_t item_bits = 12, item_mask = (1u << item_bits) - 1;
constexpr std::uint32_t thread_bits = 8, thread_mask = (1u << thread_bits) - 1;
constexpr std::uint32_t job_shift = item_bits + thread_bits;  // generation's shift
constexpr std::uint64_t spin_ns = 20000;  // polling before yielding (a worker) or sleeping (the caller)
constexpr std::uint64_t yield_ns = 50000; // a worker yielding before it sleeps

struct Pool {
  std::mutex call;                      // one parallel_for at a time
  std::mutex m;                         // guards sleeping on `wake` and on `finished`
  std::condition_variable wake;         // workers: a new job
  std::condition_variable finished;     // the caller: the job's last item ended
  std::atomic<std::size_t> threads{1};  // workers, the caller's included
  std::atomic<std::uint32_t> generation{0};  // the current job's; workers wait for it to change
  // generation << job_shift | (threads - 1) << item_bits | next item. Stored (release) after the
  // job's fields are written; a successful compare-and-swap (acquire) on the current word gives an
  // item of that job, and the job's fields are read only then: the caller rewrites them for the
  // next job only after every taken item has finished.
  std::atomic<std::uint32_t> claim{0};
  ParallelTask task = nullptr;
  void* context = nullptr;
  std::atomic<std::size_t> items{0};
  std::atomic<std::size_t> done{0};       // items of the current job finished
  std::atomic<bool> caller_asleep{false}; // the caller sleeps on `finished`
  // Test hook (pool_testing.hpp): the worker to park at its next claim, and the one parked.
  std::atomic<std::size_t> park{0}, parked{0};
};

// Never destroyed: detached workers may still wait on it while the process exits.
Pool& pool() noexcept {
  alignas(Pool) static unsigned char storage[sizeof(Pool)];
  static Pool* p = new (storage) Pool;
  return *p;
}

void pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || (defined(__arm__) && __ARM_ARCH >= 7)  // armv6 has no yield hint
  __asm__ __volatile__("yield");
#endif
}

// Holds worker `self` while the test hook asks for it: it has no item of any job meanwhile.
void park_point(Pool& p, std::size_t self) noexcept {
  if (p.park.load(std::memory_order_relaxed) != self) return;
  p.parked.store(self, std::memory_order_release);
  while (p.park.load(std::memory_order_acquire) == self) std::this_thread::sleep_for(std::chrono::microseconds(100));
  p.parked.store(0, std::memory_order_release);
}

// Takes and runs items of generation `gen` as thread `self` until none is left (or a newer job
// started, or the job runs on fewer threads).
void run_items(Pool& p, std::uint32_t gen, std::size_t self) noexcept {
  const std::uint32_t tag = gen << job_shift;
  std::uint32_t c = p.claim.load(std::memory_order_acquire);
  for (;;) {
    if (self != 0) park_point(p, self);
    if ((c & ~((1u << job_shift) - 1)) != tag) return;
    if (self > ((c >> item_bits) & thread_mask)) return;
    const std::size_t i = c & item_mask;
    if (i >= p.items.load(std::memory_order_acquire)) return;  // the closed word's too
    if (!p.claim.compare_exchange_weak(c, c + 1, std::memory_order_acquire, std::memory_order_acquire))
      continue;  // c now holds the current word
    const std::size_t items = p.items.load(std::memory_order_relaxed);
    if (i >= items) return;  // read before the claim: of another job
    p.task(p.context, i, self);
    if (p.done.fetch_add(1, std::memory_order_seq_cst) + 1 == items &&
        p.caller_asleep.load(std::memory_order_seq_cst)) {
      std::lock_guard<std::mutex> lock(p.m);  // the caller is asleep, or between its check and its wait
      p.finished.notify_one();
    }
    c = p.claim.load(std::memory_order_acquire);
  }
}

// Waits for the generation to leave `seen`: polls, yields, then sleeps. Returns the new one.
std::uint32_t wait_for_job(Pool& p, std::uint32_t seen) noexcept {
  const std::uint64_t start = now_ns();
  for (std::uint32_t polls = 0;; ++polls) {
    const std::uint32_t g = p.generation.load(std::memory_order_acquire);
    if (g != seen) return g;
    if (polls % 64 != 63) {
      pause();
      continue;
    }
    const std::uint64_t waited = now_ns() - start;
    if (waited < spin_ns) continue;
    if (waited < spin_ns + yield_ns) {
      std::this_thread::yield();
      continue;
    }
    std::unique_lock<std::mutex> lock(p.m);
    p.wake.wait(lock, [&] { return p.generation.load(std::memory_order_acquire) != seen; });
    return p.generation.load(std::memory_order_acquire);
  }
}

void worker_main(Pool& p, std::size_t self) noexcept {
  std::uint32_t seen = 0;
  for (;;) {
    seen = wait_for_job(p, seen);
    run_items(p, seen, self);
  }
}

// Waits until every item of a job of `items` has finished: polls, then sleeps.
void wait_for_items(Pool& p, std::size_t items) noexcept {
  const std::uint64_t start = now_ns();
  for (std::uint32_t polls = 0; p.done.load(std::memory_order_acquire) != items; ++polls) {
    if (polls % 64 != 63 || now_ns() - start < spin_ns) {
      pause();
      continue;
    }
    std::unique_lock<std::mutex> lock(p.m);
    p.caller_asleep.store(true, std::memory_order_seq_cst);
    p.finished.wait(lock, [&] { return p.done.load(std::memory_order_seq_cst) == items; });
    p.caller_asleep.store(false, std::memory_order_relaxed);
    return;
  }
}

// CPUs this process may run on (1 when unknown).
std::size_t usable_cpus() noexcept {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return std::size_t(n);
  }
  const unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? n : 1;
}

}  // namespace

void parallel_for(std::size_t items, std::size_t threads, ParallelTask task, void* context) noexcept {
  Pool& p = pool();
  const std::size_t running = p.threads.load(std::memory_order_acquire);
  if (threads > running) threads = running;
  if (items <= 1 || items > item_mask || threads <= 1) {
    for (std::size_t i = 0; i < items; ++i) task(context, i, 0);
    return;
  }
  std::lock_guard<std::mutex> call(p.call);
  const std::uint32_t gen = (p.generation.load(std::memory_order_relaxed) + 1) & ((1u << (32 - job_shift)) - 1);
  const std::uint32_t word = gen << job_shift | std::uint32_t(threads - 1) << item_bits;
  // Closed first. The last job's word, every item taken, may still sit in a thread between its
  // load and its compare-and-swap: once the fields below change (a larger item count), that swap
  // would take an item the last job does not have, run it with this job's task or the last one's,
  // and count it in this job's `done`, which then never equals `items`. No swap on an older word
  // succeeds after this store; a thread that reads a new field (items, acquire) finds the word
  // closed or open; the closed word's item (item_mask) is never below a job's count.
  p.claim.store(word | item_mask, std::memory_order_relaxed);
  p.task = task;
  p.context = context;
  p.done.store(0, std::memory_order_relaxed);
  p.items.store(items, std::memory_order_release);
  p.claim.store(word, std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(p.m);  // a worker between its check and its wait sees this
    p.generation.store(gen, std::memory_order_release);
  }
  p.wake.notify_all();
  run_items(p, gen, 0);
  wait_for_items(p, items);
}

std::size_t workers() noexcept { return pool().threads.load(std::memory_order_acquire); }

std::size_t start_workers(std::size_t threads) noexcept {
  Pool& p = pool();
  std::lock_guard<std::mutex> call(p.call);
  if (p.threads.load() != 1 || threads <= 1) return p.threads.load();
  const std::size_t cpus = usable_cpus();
  if (threads > cpus) threads = cpus;
  if (threads > max_threads) threads = max_threads;
  std::size_t started = 1;
  for (; started < threads; ++started) std::thread([&p, started] { worker_main(p, started); }).detach();
  p.threads.store(started, std::memory_order_release);
  return started;
}

namespace testing {

void park_worker(std::size_t worker) noexcept { pool().park.store(worker, std::memory_order_release); }
bool worker_parked(std::size_t worker) noexcept { return pool().parked.load(std::memory_order_acquire) == worker; }
void unpark_workers() noexcept { pool().park.store(0, std::memory_order_release); }

}  // namespace testing
}  // namespace emha::port

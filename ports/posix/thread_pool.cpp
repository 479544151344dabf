// SPDX-License-Identifier: Apache-2.0
// POSIX port: parallel_for over a fixed set of worker threads (emha/port.hpp).
// The application calls start_workers(n) once at init: n - 1 threads are created (the only
// allocations here: their stacks and std::thread's state) and live until the process ends; n is
// clamped to the CPUs the process may run on (its affinity mask).
//
// A parallel_for publishes one job (task function, context, count) as a new generation of the
// 32-bit `claim` word (generation in the high 20 bits, the next task index in the low 12: 32-bit
// atomics are lock-free on every ARM Linux core, armv6 included, 64-bit ones not). The caller and
// the workers take task indices by compare-and-swap on that word, so a worker still holding an
// old generation cannot take a task of the new one (and if the generation wrapped around to the
// very same word, the claim is a valid one of the current job: the index is checked again after
// it); the caller waits only for tasks that were taken and are running, and runs every task
// nobody has taken itself. A job of more than 4095 tasks runs on the caller. A worker that is descheduled, or was asleep, when a job
// starts therefore costs the job nothing: the others take its share.
//
// A job whose caller waited longer for the others' last tasks than it worked itself (a worker was
// descheduled holding a task: a busy core, more threads than cores) is a sign that workers are
// not getting a core: the next jobs run on the caller alone, 1, 2, 4 ... up to 256 of them after
// successive such jobs, and a job that goes well halves the count again. Results do not depend
// on it: tasks are the same calls, in any order.
//
// Waiting is bounded by time, not by a count of polls (a `pause` costs a few cycles on some cores
// and over a hundred on others): a worker polls for a new job for spin_ns, then yields its core
// for yield_ns more, then sleeps on a condition variable; the caller, waiting for tasks that
// others run, polls for spin_ns and then yields, so that a worker sharing its core (more threads
// than cores, or a busy neighbour process) gets to finish. Attention calls parallel_for a few
// times per sequence, microseconds apart: a short spin saves a futex wake-up per call.

#include <sched.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <new>
#include <thread>

#include "emha/port.hpp"

namespace emha::port {
namespace {

constexpr std::size_t max_threads = 256;
constexpr std::uint32_t index_bits = 12, index_mask = (1u << index_bits) - 1;  // of `claim`
constexpr std::uint64_t spin_ns = 20000;   // polling before yielding
constexpr std::uint64_t yield_ns = 200000; // a worker yielding before it sleeps

struct Pool {
  std::mutex call;                      // one parallel_for at a time
  std::mutex m;                         // guards sleeping on `wake`
  std::condition_variable wake;
  std::atomic<std::size_t> threads{1};  // workers, the caller's included
  std::atomic<std::uint32_t> generation{0};  // the current job's; workers wait for it to change
  // generation << index_bits | next task index. Stored (release) after the job's fields are
  // written; a successful compare-and-swap (acquire) on the current word gives a task of that
  // job, and the job's fields are read only then: the caller rewrites them for the next job only
  // after every taken task has finished.
  std::atomic<std::uint32_t> claim{0};
  ParallelTask task = nullptr;
  void* context = nullptr;
  std::atomic<std::size_t> tasks{0};
  std::atomic<std::size_t> done{0};     // tasks of the current job finished
  // Under `call`: jobs still to run on the caller alone, and how many the next stall sets.
  std::uint32_t serial_left = 0, backoff = 1;
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

// Takes and runs tasks of generation `gen` until none is left (or a newer job started).
void run_tasks(Pool& p, std::uint32_t gen) noexcept {
  const std::uint32_t tag = gen << index_bits;
  std::uint32_t c = p.claim.load(std::memory_order_acquire);
  for (;;) {
    if ((c & ~index_mask) != tag) return;
    const std::size_t i = c & index_mask;
    if (i >= p.tasks.load(std::memory_order_relaxed)) return;
    if (!p.claim.compare_exchange_weak(c, c + 1, std::memory_order_acquire, std::memory_order_acquire))
      continue;  // c now holds the current word
    if (i >= p.tasks.load(std::memory_order_relaxed)) return;  // read before the claim: of another job
    p.task(p.context, i);
    p.done.fetch_add(1, std::memory_order_release);
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

void worker_main(Pool& p) noexcept {
  std::uint32_t seen = 0;
  for (;;) {
    seen = wait_for_job(p, seen);
    run_tasks(p, seen);
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

void parallel_for(std::size_t tasks, ParallelTask task, void* context) noexcept {
  Pool& p = pool();
  if (tasks <= 1 || tasks > index_mask || p.threads.load(std::memory_order_acquire) == 1) {
    for (std::size_t i = 0; i < tasks; ++i) task(context, i);
    return;
  }
  std::lock_guard<std::mutex> call(p.call);
  if (p.serial_left > 0) {
    --p.serial_left;
    for (std::size_t i = 0; i < tasks; ++i) task(context, i);
    return;
  }
  const std::uint64_t t0 = now_ns();
  p.task = task;
  p.context = context;
  p.tasks.store(tasks, std::memory_order_relaxed);
  p.done.store(0, std::memory_order_relaxed);
  const std::uint32_t gen = p.generation.load(std::memory_order_relaxed) + 1;
  p.claim.store(gen << index_bits, std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(p.m);  // a worker between its check and its wait sees this
    p.generation.store(gen, std::memory_order_release);
  }
  p.wake.notify_all();
  run_tasks(p, gen);
  const std::uint64_t start = now_ns();
  for (std::uint32_t polls = 0; p.done.load(std::memory_order_acquire) != tasks; ++polls) {
    if (polls % 64 == 63 && now_ns() - start >= spin_ns)
      std::this_thread::yield();
    else
      pause();
  }
  const std::uint64_t waited = now_ns() - start, worked = start - t0;
  if (waited > worked + spin_ns) {
    p.serial_left = p.backoff;
    p.backoff = p.backoff < 256 ? 2 * p.backoff : 256;
  } else if (p.backoff > 1) {
    p.backoff /= 2;
  }
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
  for (; started < threads; ++started) std::thread([&p] { worker_main(p); }).detach();
  p.threads.store(started, std::memory_order_release);
  return started;
}

}  // namespace emha::port

// SPDX-License-Identifier: Apache-2.0
// POSIX port: parallel_for over a fixed set of worker threads (emha/port.hpp).
// The application calls start_workers(n) once at init: n - 1 threads are created (the only
// allocations here: their stacks and std::thread's state) and live until the process ends. A
// parallel_for publishes one job (task function, context, count) and bumps a generation
// counter; workers and the caller take task indices from one atomic counter until none is left.
// Workers poll the generation for a while before they sleep on a condition variable: attention
// calls parallel_for three times per sequence, microseconds apart, and a futex wake-up costs
// more than a short job.

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <new>
#include <thread>

#include "emha/port.hpp"

namespace emha::port {
namespace {

constexpr std::size_t max_threads = 256;
constexpr int spin_polls = 1 << 15;  // ~50-100 us of polling before a worker sleeps

struct Pool {
  std::mutex call;                      // one parallel_for at a time
  std::mutex m;                         // guards sleeping on `wake`
  std::condition_variable wake;
  std::atomic<std::size_t> threads{1};  // workers, the caller's included
  std::atomic<std::size_t> generation{0};
  // The current job; written under `call` before `generation` is bumped (release), read after
  // a worker sees the new generation (acquire).
  ParallelTask task = nullptr;
  void* context = nullptr;
  std::size_t tasks = 0;
  std::atomic<std::size_t> next{0};     // next task index to take
  std::atomic<std::size_t> busy{0};     // workers not yet done with the current job
};

// Never destroyed: detached workers may still wait on it while the process exits.
Pool& pool() noexcept {
  alignas(Pool) static unsigned char storage[sizeof(Pool)];
  static Pool* p = new (storage) Pool;
  return *p;
}

void run_tasks(Pool& p) noexcept {
  for (std::size_t i; (i = p.next.fetch_add(1, std::memory_order_relaxed)) < p.tasks;)
    p.task(p.context, i);
}

void pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

void worker_main(Pool& p) noexcept {
  std::size_t seen = 0;
  for (;;) {
    int polls = 0;
    while (p.generation.load(std::memory_order_acquire) == seen && polls < spin_polls) {
      pause();
      ++polls;
    }
    if (p.generation.load(std::memory_order_acquire) == seen) {
      std::unique_lock<std::mutex> lock(p.m);
      p.wake.wait(lock, [&] { return p.generation.load(std::memory_order_acquire) != seen; });
    }
    seen = p.generation.load(std::memory_order_acquire);
    run_tasks(p);
    p.busy.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace

void parallel_for(std::size_t tasks, ParallelTask task, void* context) noexcept {
  Pool& p = pool();
  const std::size_t helpers = p.threads.load(std::memory_order_acquire) - 1;
  if (tasks <= 1 || helpers == 0) {
    for (std::size_t i = 0; i < tasks; ++i) task(context, i);
    return;
  }
  std::lock_guard<std::mutex> call(p.call);
  p.task = task;
  p.context = context;
  p.tasks = tasks;
  p.next.store(0, std::memory_order_relaxed);
  p.busy.store(helpers, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(p.m);  // a worker between its check and its wait sees this
    p.generation.fetch_add(1, std::memory_order_release);
  }
  p.wake.notify_all();
  run_tasks(p);
  while (p.busy.load(std::memory_order_acquire) != 0) pause();
}

std::size_t workers() noexcept { return pool().threads.load(std::memory_order_acquire); }

std::size_t start_workers(std::size_t threads) noexcept {
  Pool& p = pool();
  std::lock_guard<std::mutex> call(p.call);
  if (p.threads.load() != 1 || threads <= 1) return p.threads.load();
  if (threads > max_threads) threads = max_threads;
  std::size_t started = 1;
  for (; started < threads; ++started) std::thread([&p] { worker_main(p); }).detach();
  p.threads.store(started, std::memory_order_release);
  return started;
}

}  // namespace emha::port

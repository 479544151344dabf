// SPDX-License-Identifier: Apache-2.0
#pragma once
// A stage of the forward pass split over threads (emha::port::parallel_for). Each task owns a
// scratch slot of the call's arena (its index names it, whichever thread runs it) and takes
// items from a shared counter until none is left (a task on a thread that is slow, or shares
// its core, takes fewer), and every item writes its own outputs with the code one thread would
// run: results are bit-identical for any number of threads and any order.

#include <atomic>
#include <cstddef>

#include "attention/kernel_set.hpp"
#include "attention/return_on_error.hpp"
#include "emha/arena.hpp"
#include "emha/detail/mha_plan.hpp"
#include "emha/port.hpp"
#include "kernels/gemm_columns.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

// `count` scratch arenas of `bytes` each, one block of the call's arena (mha_arena_bytes).
struct TaskSlots {
  std::byte* base;
  std::size_t bytes;
  std::size_t count;

  ArenaRef slot(std::size_t i) const noexcept { return ArenaRef(base + i * bytes, bytes); }
};

// A stage of fewer FLOPs stays on the caller's thread: waking a worker and moving data between
// cores costs more than it saves (MHA (S, D, H) = (32, 64, 4) is ~1.2 MFLOP a stage at most).
inline constexpr std::size_t mha_min_parallel_flops = std::size_t(1) << 22;

// Tasks a stage of `flops` runs as: one, or one per slot and running worker (never more than
// there are items).
inline std::size_t stage_tasks(const TaskSlots& slots, std::size_t items, std::size_t flops) noexcept {
  if (flops < mha_min_parallel_flops) return 1;
  const std::size_t running = port::workers();
  const std::size_t tasks = slots.count < running ? slots.count : running;
  return tasks < items ? tasks : items;
}

// Whether the port runs tasks on threads (posix). Without, stages call their items directly: no
// call through parallel_for's task pointer, whose frames a Cortex-M stack would have to hold.
#ifndef EMHA_PORT_THREADS
#define EMHA_PORT_THREADS 0
#endif
inline constexpr bool port_threads = EMHA_PORT_THREADS != 0;

// body(item, arena) for every item in [0, items), in `tasks` tasks; the first error a task
// meets ends that task and is returned (an arena sized by mha_arena_bytes never runs out).
template <class Body>
Status for_items(const TaskSlots& slots, std::size_t items, std::size_t tasks, const Body& body) noexcept {
  if (!port_threads || tasks == 1) {
    ArenaRef arena = slots.slot(0);
    for (std::size_t i = 0; i < items; ++i) EMHA_TRY(body(i, arena));
    return Status::ok;
  }
  struct Job {
    const Body* body;
    const TaskSlots* slots;
    std::size_t items;
    std::atomic<std::size_t> next;
    std::atomic<int> status;
  };
  Job job{&body, &slots, items, {0}, {0}};
  port::parallel_for(tasks, [](void* context, std::size_t t) noexcept {
    Job& j = *static_cast<Job*>(context);
    ArenaRef arena = j.slots->slot(t);
    for (std::size_t i; (i = j.next.fetch_add(1, std::memory_order_relaxed)) < j.items;) {
      const Status s = (*j.body)(i, arena);
      if (s != Status::ok) {
        int none = 0;
        j.status.compare_exchange_strong(none, int(s));
        return;
      }
    }
  }, &job);
  return Status(job.status.load());
}

// C[m x n] = A W^T (+ bias) (+ beta C) with W [n x k] in place (ldw) or pre-packed (packed
// non-null).
struct Product {
  std::size_t m, n, k;
  const float* a;
  std::size_t lda;
  const float* w;
  std::size_t ldw;
  const float* packed;
  std::size_t packed_floats;
  const float* bias;
  float* c;
  std::size_t ldc;
  float beta = 0.0f;  // 1: accumulate onto C (the residual)
  bool k_blocks = false;  // GemmOptions::k_blocks
};

// A product in column blocks, two per task when split (multiples of gemm_max_nr wide: the same
// panels, so the same bits, as one call; two, so that a task on a slower core hands one over).
template <class K>
Status run_product(const Product& p, const TaskSlots& slots) noexcept {
  const std::size_t tasks = stage_tasks(slots, p.n, 2 * p.m * p.n * p.k);
  const std::size_t parts = tasks > 1 ? 2 * tasks : 1;
  const std::size_t width = gemm_round_up((p.n + parts - 1) / parts, gemm_max_nr);
  const std::size_t blocks = (p.n + width - 1) / width;
  // Inlined into run_product's frame: a frame of its own takes Cortex-M4 -Os forward over the
  // 1 KiB stack budget (tests/firmware/stack_budget.py).
  return for_items(slots, blocks, mha_min(tasks, blocks), [&](std::size_t i, ArenaRef& arena) __attribute__((always_inline)) {
    const std::size_t j0 = i * width, j1 = mha_min(p.n, j0 + width);
    if (p.packed)  // never on the reference path, which is given no packed weights
      return detail::gemm_f32_prepacked_columns(p.m, p.n, j0, j1, p.k, p.a, p.lda, p.packed,
                                                p.packed_floats, p.c, p.ldc,
                                                GemmOptions{1.0f, p.beta, p.bias, p.k_blocks});
    return K::gemm_f32(p.m, j1 - j0, p.k, p.a, p.lda, p.w + j0 * p.ldw, p.ldw, Trans::transpose,
                       p.c + j0, p.ldc, arena,
                       GemmOptions{1.0f, p.beta, p.bias ? p.bias + j0 : nullptr, p.k_blocks});
  });
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

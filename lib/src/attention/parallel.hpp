// SPDX-License-Identifier: Apache-2.0
#pragma once
// A stage of the forward pass split over threads (emha::port::parallel_for). Its items are taken
// one at a time by whichever thread is free (a thread that is slow, late or shares its core takes
// fewer); each runs in the scratch slot of the call's arena that its thread's slot names, and
// writes its own outputs with the code one thread would run: results are bit-identical for any
// number of threads and any order.

#include <atomic>
#include <cstddef>
#include <type_traits>

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

// A stage of fewer FLOPs, that also reads fewer bytes, stays on the caller's thread: waking a
// worker and moving data between cores costs more than it saves (MHA (S, D, H) = (32, 64, 4) is
// ~1.2 MFLOP a stage at most). Bytes count on their own: a decode step's projections are ~2
// FLOPs per weight read (a GEMV), its attention ~1 per cached byte, so their time is set by the
// bytes, which several cores read faster than one (512 KiB is tens of microseconds from memory).
inline constexpr std::size_t mha_min_parallel_flops = std::size_t(1) << 22;
inline constexpr std::size_t mha_min_parallel_bytes = std::size_t(1) << 19;

// Tasks a stage of `flops` that reads `bytes` runs as: one, or one per slot and running worker
// (never more than there are items).
inline std::size_t stage_tasks(const TaskSlots& slots, std::size_t items, std::size_t flops,
                               std::size_t bytes) noexcept {
  if (flops < mha_min_parallel_flops && bytes < mha_min_parallel_bytes) return 1;
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

// body(item, arena) for every item in [0, items), on up to `tasks` threads; the first error an
// item meets is returned, and the items not yet started then do nothing (an arena sized by
// mha_arena_bytes never runs out).
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
    std::atomic<int> status;
  };
  Job job{&body, &slots, {0}};
  port::parallel_for(items, tasks, [](void* context, std::size_t i, std::size_t slot) noexcept {
    Job& j = *static_cast<Job*>(context);
    if (j.status.load(std::memory_order_relaxed) != 0) return;
    ArenaRef arena = j.slots->slot(slot);
    const Status s = (*j.body)(i, arena);
    if (s != Status::ok) {
      int none = 0;
      j.status.compare_exchange_strong(none, int(s));
    }
  }, &job);
  return Status(job.status.load());
}

// C[m x n] = A W^T (+ bias) (+ beta C) with W [n x k] in place (rows k apart: every layer
// weight's row is a whole row) or pre-packed (packed non-null): float, or int8 (ProductW8).
struct Product {
  std::size_t m, n, k;
  const float* a;
  std::size_t lda;
  const void* w;  // float or int8 [n x k]
  const void* packed;  // gemm_f32_pack_b's or gemm_w8a32_pack_b's panels, or null
  std::size_t packed_bytes;
  const float* bias;
  float* c;
  std::size_t ldc;
  float beta = 0.0f;  // 1: accumulate onto C (the residual)
  bool k_blocks = false;  // GemmOptions::k_blocks
};

// A product with int8 weights: W's row scales [n] as well (in place; pre-packed panels hold their
// own). A type of its own so that the float products' frames keep their size (Cortex-M stack).
struct ProductW8 : Product {
  const float* scale;
};
template <bool Int8>
using ProductOf = std::conditional_t<Int8, ProductW8, Product>;

// A product in column blocks, four per thread when split (multiples of gemm_max_nr wide: the same
// panels, so the same bits, as one call; four, so that a thread on a slower or shared core takes
// fewer and the others finish at nearly the same time).
// Int8: W is int8 (gemm_w8a32); a compile-time choice, so that a float layer links no int8 GEMM.
template <class K, bool Int8>
Status run_product(const ProductOf<Int8>& p, const TaskSlots& slots) noexcept {
  const std::size_t w_bytes = Int8 ? 1 : sizeof(float);
  const std::size_t tasks = stage_tasks(slots, p.n, 2 * p.m * p.n * p.k, sizeof(float) * p.m * p.k + w_bytes * p.n * p.k);
  const std::size_t parts = tasks > 1 ? 4 * tasks : 1;
  const std::size_t width = gemm_round_up((p.n + parts - 1) / parts, gemm_max_nr);
  const std::size_t blocks = (p.n + width - 1) / width;
  // Inlined into run_product's frame: a frame of its own takes Cortex-M4 -Os forward over the
  // 1 KiB stack budget (tests/firmware/stack_budget.py).
  return for_items(slots, blocks, mha_min(tasks, blocks), [&](std::size_t i, ArenaRef& arena) __attribute__((always_inline)) {
    const std::size_t j0 = i * width, j1 = mha_min(p.n, j0 + width);
    const GemmOptions o{1.0f, p.beta, p.bias ? p.bias + (p.packed ? 0 : j0) : nullptr, p.k_blocks};
    if constexpr (Int8) {
      if constexpr (K::packed_weights) {
        if (p.packed)
          return detail::gemm_w8a32_prepacked_task(p.m, p.n, j0, j1, p.k, p.a, p.lda,
                                                   static_cast<const std::int8_t*>(p.packed),
                                                   p.packed_bytes, p.c, p.ldc, o, arena);
      }
      return K::gemm_w8a32(p.m, j1 - j0, p.k, p.a, p.lda, static_cast<const std::int8_t*>(p.w) + j0 * p.k,
                           p.k, p.scale + j0, p.c + j0, p.ldc, arena, o);
    } else {
      if constexpr (K::packed_weights) {
        if (p.packed)
          return detail::gemm_f32_prepacked_columns(p.m, p.n, j0, j1, p.k, p.a, p.lda,
                                                    static_cast<const float*>(p.packed),
                                                    p.packed_bytes / sizeof(float), p.c, p.ldc, o);
      }
      return K::gemm_f32(p.m, j1 - j0, p.k, p.a, p.lda, static_cast<const float*>(p.w) + j0 * p.k, p.k,
                         Trans::transpose, p.c + j0, p.ldc, arena, o);
    }
  });
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

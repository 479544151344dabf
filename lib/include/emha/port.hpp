// SPDX-License-Identifier: Apache-2.0
#pragma once
// Platform hooks: declared once here, defined per platform in ports/<name>/port.cpp
// (chosen by the CMake option EMHA_PORT). lib/ calls nothing platform-specific but these.

#include <cstddef>
#include <cstdint>

namespace emha::port {

// Called when a precondition is violated (EMHA_CHECKS=1). Must not return.
[[noreturn]] void abort(const char* file, int line, const char* message) noexcept;

// Writes one line of diagnostics (no trailing newline needed). May do nothing.
void log(const char* message) noexcept;

// Monotonic time in nanoseconds; 0 on a port without a clock.
std::uint64_t now_ns() noexcept;

// A free-running cycle (or tick) counter and its frequency in Hz; both 0 when unavailable.
std::uint64_t cycles() noexcept;
std::uint64_t cycles_per_second() noexcept;

// Threads. parallel_for(items, threads, task, context) calls task(context, i, slot) once for
// every i in [0, items), on at most `threads` threads, the caller's included, and returns when
// every call has returned. `slot` (< threads; the caller's is 0) names the thread a call runs on:
// no two calls running at the same time share a slot, so a call may use scratch memory its slot
// names (emha gives slot s the call arena's scratch slot s). Which thread runs which item is not
// fixed, so results never depend on it. Calls from several threads at once are serialized.
// posix: a fixed set of threads the application starts once at init, outside any no-heap zone
// (creating a thread allocates its stack); until then, and on the cortex_m and none ports, the
// items run one after another on the caller, in slot 0.
using ParallelTask = void (*)(void* context, std::size_t item, std::size_t slot) noexcept;
void parallel_for(std::size_t items, std::size_t threads, ParallelTask task, void* context) noexcept;

// Threads parallel_for runs items on, the caller's included: 1 when it runs them serially.
std::size_t workers() noexcept;

// Starts threads - 1 worker threads beside the caller's (posix; once, at init: a second call
// returns the current count) and returns workers(). Serial ports start nothing and return 1.
std::size_t start_workers(std::size_t threads) noexcept;

// The port's name ("posix", "cortex_m", "none").
const char* name() noexcept;

}  // namespace emha::port

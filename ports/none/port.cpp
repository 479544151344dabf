// SPDX-License-Identifier: Apache-2.0
// Reference port with no clock and no output: the minimum a new platform must provide.
// abort() spins, since there is nothing to return to.

#include "emha/port.hpp"

namespace emha::port {

void abort(const char*, int, const char*) noexcept {
  for (;;) {
  }
}

void log(const char*) noexcept {}
std::uint64_t now_ns() noexcept { return 0; }
std::uint64_t cycles() noexcept { return 0; }
std::uint64_t cycles_per_second() noexcept { return 0; }
const char* name() noexcept { return "none"; }

// No threads: parallel_for runs every item on the caller, in order, in slot 0.
void parallel_for(std::size_t items, std::size_t, ParallelTask task, void* context) noexcept {
  for (std::size_t i = 0; i < items; ++i) task(context, i, 0);
}
std::size_t workers() noexcept { return 1; }
std::size_t start_workers(std::size_t) noexcept { return 1; }

}  // namespace emha::port

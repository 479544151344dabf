// SPDX-License-Identifier: Apache-2.0
// POSIX port (Linux boards, the development host): stderr and clock_gettime(CLOCK_MONOTONIC).

#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "emha/port.hpp"

namespace emha::port {

void abort(const char* file, int line, const char* message) noexcept {
  std::fprintf(stderr, "emha: %s:%d: check failed: %s\n", file, line, message);
  std::abort();
}

void log(const char* message) noexcept { std::fprintf(stderr, "emha: %s\n", message); }

std::uint64_t now_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::uint64_t(ts.tv_sec) * 1000000000u + std::uint64_t(ts.tv_nsec);
}

// The monotonic clock doubles as the cycle counter: portable across x86 and ARM Linux, and
// user space may not read the ARM PMU.
std::uint64_t cycles() noexcept { return now_ns(); }
std::uint64_t cycles_per_second() noexcept { return 1000000000u; }

const char* name() noexcept { return "posix"; }

}  // namespace emha::port

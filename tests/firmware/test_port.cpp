// SPDX-License-Identifier: Apache-2.0
// The cortex_m port's hooks: name, a cycle counter that advances, the clock it reports.

#include <cstring>

#include "cortex_m.hpp"
#include "emha/port.hpp"
#include "runner.hpp"

namespace fw {

void test_port() {
  Suite suite("port");
  check(std::strcmp(emha::port::name(), "cortex_m") == 0, "port::name() is cortex_m");
  check(emha::port::cycles_per_second() == EMHA_CORTEX_M_CORE_HZ, "cycles_per_second() is the board clock");
  const std::uint64_t t0 = emha::port::cycles();
  // Long enough for SysTick (the fallback under qemu, which follows host time) to move.
  volatile float x = 1.0f;
  std::uint64_t t1 = t0;
  for (int i = 0; i < 200000 && t1 == t0; ++i) {
    x = x * 1.0000001f;
    t1 = emha::port::cycles();
  }
  if (!check(t1 > t0, "cycles() advances")) Line() << "  t0 " << static_cast<unsigned long long>(t0) << ", t1 " << static_cast<unsigned long long>(t1);
  const std::uint64_t n0 = emha::port::now_ns();
  check(emha::port::now_ns() >= n0, "now_ns() is monotonic");
  Line() << "  cycle counter: " << emha::cortex_m::cycle_counter();
}

}  // namespace fw

// SPDX-License-Identifier: Apache-2.0
// The cortex_m port's hooks: name, a cycle counter that advances, the clock it reports; and the
// kernel variant this build runs.

#include <cstdint>
#include <cstring>

#include "cortex_m.hpp"
#include "emha/port.hpp"
#include "emha/simd.hpp"
#include "support/unit.hpp"

EMHA_TEST_CASE("build") {
  EMHA_CHECK_MESSAGE(std::strcmp(emha::simd_isa(), EMHA_EXPECTED_ISA) == 0,
                     "simd_isa() = " << emha::simd_isa() << ", expected " << EMHA_EXPECTED_ISA);
}

EMHA_TEST_CASE("port") {
  EMHA_CHECK(std::strcmp(emha::port::name(), "cortex_m") == 0);
  EMHA_CHECK(emha::port::cycles_per_second() == EMHA_CORTEX_M_CORE_HZ);
  const std::uint64_t t0 = emha::port::cycles();
  // Long enough for SysTick (the fallback under qemu, which follows host time) to move.
  volatile float x = 1.0f;
  std::uint64_t t1 = t0;
  for (int i = 0; i < 200000 && t1 == t0; ++i) {
    x = x * 1.0000001f;
    t1 = emha::port::cycles();
  }
  EMHA_CHECK_MESSAGE(t1 > t0, "cycles() advances: t0 " << static_cast<unsigned long long>(t0) << ", t1 "
                                                       << static_cast<unsigned long long>(t1));
  const std::uint64_t n0 = emha::port::now_ns();
  EMHA_CHECK(emha::port::now_ns() >= n0);
  EMHA_MESSAGE("cycle counter: " << emha::cortex_m::cycle_counter());
}

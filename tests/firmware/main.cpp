// SPDX-License-Identifier: Apache-2.0
// emha's bare-metal test firmware: every test case of the shared test sources (tests/kernels,
// tests/attention: written over tests/support/unit.hpp, the same sources the host suite runs with
// doctest) and the firmware's own (the port's hooks, the build's kernel variant), run by the
// runner in runner.cpp. Every buffer is static; the link has the heap gate. The exit status is the
// number of failed checks (capped at 255).

#include "emha/port.hpp"
#include "emha/simd.hpp"
#include "support/unit.hpp"

int main() {
  emha::unit::Line() << "emha firmware: port " << emha::port::name() << ", kernels " << emha::simd_isa() << " ("
                     << static_cast<unsigned>(emha::simd_f32_lanes()) << " lane)";
  emha::unit::run_all();
  const unsigned failed = emha::unit::failures();
  emha::unit::Line() << "emha firmware: " << emha::unit::checks() << " checks, " << failed << " failed";
  return failed > 255 ? 255 : static_cast<int>(failed);
}

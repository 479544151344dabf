// SPDX-License-Identifier: Apache-2.0
#pragma once
// The stack a call takes, for the shared layer tests: on the firmware measured by painting the
// free stack (tests/firmware/stack_probe.cpp; tests/firmware/stack_budget.py checks the printed
// high-water against its bound), on the host not measured (0).

#include <cstddef>

#include "support/unit.hpp"

namespace emha::test {

#ifdef EMHA_TEST_FIRMWARE
// Bytes of stack below the probe's own frame that fn(context) used (its frames, and those of
// everything it called), with interrupts masked: a firmware adds its handlers' stack on top.
// The probe's frame is a few words; fn should be a thin trampoline.
std::size_t stack_bytes_used(void (*fn)(void*), void* context) noexcept;
#else
inline std::size_t stack_bytes_used(void (*fn)(void*), void* context) noexcept {
  fn(context);
  return 0;
}
#endif

// The firmware's line "stack: forward used at most N bytes (measured, <what>)", which
// stack_budget.py --measured-log reads, and a check that the probe saw the call; nothing on the host.
inline void report_forward_stack(std::size_t bytes, const char* what) {
  if constexpr (on_firmware) {
    EMHA_MESSAGE("stack: forward used at most " << static_cast<unsigned>(bytes) << " bytes (measured, " << what << ")");
    EMHA_CHECK(bytes > 0);
  } else {
    (void)bytes;
    (void)what;
  }
}

}  // namespace emha::test

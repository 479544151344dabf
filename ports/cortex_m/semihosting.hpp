// SPDX-License-Identifier: Apache-2.0
#pragma once
// ARM semihosting: the debugger (or qemu -semihosting) does I/O for the target. The few calls
// the cortex_m port, the test firmware and the device benchmarks need. Each is one BKPT 0xAB:
// with no debugger or semihosting emulator attached, that halts the core (HardFault), so
// production firmware builds the port with EMHA_CORTEX_M_SEMIHOSTING=0.

#include <cstdint>

namespace emha::cortex_m::semihosting {

enum Op : std::uint32_t {
  sys_write0 = 0x04,         // write a NUL-terminated string to the host's console
  sys_exit = 0x18,           // end the program: success or failure only
  sys_exit_extended = 0x20,  // end the program with an exit code
};
inline constexpr std::uint32_t adp_stopped_application_exit = 0x20026;
inline constexpr std::uint32_t adp_stopped_run_time_error = 0x20023;

inline std::uint32_t call(std::uint32_t op, const void* arg) noexcept {
  register std::uint32_t r0 asm("r0") = op;
  register const void* r1 asm("r1") = arg;
  asm volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

inline void write0(const char* text) noexcept { call(sys_write0, text); }

// Ends the program; the host (qemu) exits with `code`.
[[noreturn]] inline void exit(int code) noexcept {
  const std::uint32_t block[2] = {adp_stopped_application_exit, static_cast<std::uint32_t>(code)};
  call(sys_exit_extended, block);
  // A host without SYS_EXIT_EXTENDED returns here: SYS_EXIT tells success or failure.
  const std::uintptr_t reason = code == 0 ? adp_stopped_application_exit : adp_stopped_run_time_error;
  call(sys_exit, reinterpret_cast<const void*>(reason));
  for (;;) {
  }
}

}  // namespace emha::cortex_m::semihosting

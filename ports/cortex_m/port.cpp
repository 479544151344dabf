// SPDX-License-Identifier: Apache-2.0
// Cortex-M port (bare metal, armv7-M and armv8-M mainline: M4, M7, M33, M55, ...).
//   cycles(): DWT->CYCCNT, extended to 64 bits in software (call it at least once per 2^32
//             cycles, 170 s at 25 MHz); when the core has no working cycle counter (qemu models
//             none), SysTick at the core clock, taken over for this, with a wrap count kept by
//             its interrupt. Either starts on the first call.
//   log(), abort(): semihosting (SYS_WRITE0, SYS_EXIT_EXTENDED), i.e. a debugger or qemu
//             -semihosting; with EMHA_CORTEX_M_SEMIHOSTING=0, log() does nothing and abort()
//             masks interrupts and spins, for boards running without a debugger.

#include <cstdint>

#include "cortex_m.hpp"
#include "emha/port.hpp"

#ifndef EMHA_CORTEX_M_CORE_HZ
#define EMHA_CORTEX_M_CORE_HZ 25000000
#endif
#ifndef EMHA_CORTEX_M_SEMIHOSTING
#define EMHA_CORTEX_M_SEMIHOSTING 1
#endif

#if EMHA_CORTEX_M_SEMIHOSTING
#include "semihosting.hpp"
#endif

namespace {

// System control space registers (ARMv7-M / ARMv8-M architecture manuals).
volatile std::uint32_t& reg(std::uintptr_t address) noexcept {
  return *reinterpret_cast<volatile std::uint32_t*>(address);
}
constexpr std::uintptr_t dwt_ctrl = 0xE0001000, dwt_cyccnt = 0xE0001004, dwt_lar = 0xE0001FB0;
constexpr std::uintptr_t demcr = 0xE000EDFC;
constexpr std::uintptr_t syst_csr = 0xE000E010, syst_rvr = 0xE000E014, syst_cvr = 0xE000E018;
constexpr std::uint32_t demcr_trcena = 1u << 24;
constexpr std::uint32_t dwt_ctrl_cyccntena = 1u << 0, dwt_ctrl_nocyccnt = 1u << 25;
constexpr std::uint32_t systick_enable_tickint_coreclock = 0x7;
constexpr std::uint32_t systick_period = 1u << 24;  // RVR = 0xFFFFFF: 2^24 cycles per wrap

enum class Counter : std::uint8_t { none, dwt, systick };
Counter g_counter = Counter::none;
std::uint32_t g_core_hz = EMHA_CORTEX_M_CORE_HZ;
std::uint32_t g_dwt_last = 0;      // last CYCCNT seen
std::uint64_t g_dwt_high = 0;      // wraps of CYCCNT, << 32
volatile std::uint32_t g_systick_wraps = 0;

bool start_dwt() noexcept {
  reg(demcr) |= demcr_trcena;
#if defined(__ARM_ARCH_7EM__) || defined(__ARM_ARCH_7M__)
  reg(dwt_lar) = 0xC5ACCE55;  // unlock (Cortex-M7 needs it; ignored where there is no lock)
#endif
  if (reg(dwt_ctrl) & dwt_ctrl_nocyccnt) return false;
  reg(dwt_cyccnt) = 0;
  reg(dwt_ctrl) |= dwt_ctrl_cyccntena;
  const std::uint32_t before = reg(dwt_cyccnt);
  for (int i = 0; i < 64; ++i) asm volatile("nop");
  return reg(dwt_cyccnt) != before;  // RAZ/WI where no DWT is implemented (qemu)
}

void start_systick() noexcept {
  reg(syst_csr) = 0;
  reg(syst_rvr) = systick_period - 1;
  reg(syst_cvr) = 0;
  g_systick_wraps = 0;
  reg(syst_csr) = systick_enable_tickint_coreclock;
}

void start_counter() noexcept {
  g_counter = start_dwt() ? Counter::dwt : Counter::systick;
  if (g_counter == Counter::systick) start_systick();
}

#if EMHA_CORTEX_M_SEMIHOSTING
void write_decimal(int value) noexcept {
  char text[12];
  char* p = text + sizeof text;
  *--p = '\0';
  unsigned v = value < 0 ? 0u - unsigned(value) : unsigned(value);
  do {
    *--p = char('0' + v % 10);
    v /= 10;
  } while (v);
  if (value < 0) *--p = '-';
  emha::cortex_m::semihosting::write0(p);
}
#endif

}  // namespace

// SysTick exception: counts wraps of the 24-bit down-counter (vector from the start-up code).
extern "C" void SysTick_Handler() { g_systick_wraps = g_systick_wraps + 1; }

namespace emha::cortex_m {

void set_core_clock_hz(std::uint32_t hz) noexcept { g_core_hz = hz; }

const char* cycle_counter() noexcept {
  return g_counter == Counter::dwt ? "dwt" : g_counter == Counter::systick ? "systick" : "none";
}

}  // namespace emha::cortex_m

namespace emha::port {

void abort(const char* file, int line, const char* message) noexcept {
#if EMHA_CORTEX_M_SEMIHOSTING
  namespace sh = emha::cortex_m::semihosting;
  sh::write0("emha: ");
  sh::write0(file);
  sh::write0(":");
  write_decimal(line);
  sh::write0(": check failed: ");
  sh::write0(message);
  sh::write0("\n");
  sh::exit(134);  // as a process killed by SIGABRT
#else
  (void)file;
  (void)line;
  (void)message;
  asm volatile("cpsid i" ::: "memory");
  for (;;) {
  }
#endif
}

void log(const char* message) noexcept {
#if EMHA_CORTEX_M_SEMIHOSTING
  emha::cortex_m::semihosting::write0("emha: ");
  emha::cortex_m::semihosting::write0(message);
  emha::cortex_m::semihosting::write0("\n");
#else
  (void)message;
#endif
}

std::uint64_t cycles() noexcept {
  if (g_counter == Counter::none) start_counter();
  if (g_counter == Counter::dwt) {
    const std::uint32_t now = reg(dwt_cyccnt);
    if (now < g_dwt_last) g_dwt_high += std::uint64_t(1) << 32;
    g_dwt_last = now;
    return g_dwt_high | now;
  }
  // SysTick reloads to 2^24 - 1 and counts down; its interrupt counts a wrap as the count
  // reaches 0, so 0 is the start of the next period and 2^24 - 1 the first tick into it.
  // Re-read if the interrupt ran between the two reads.
  std::uint32_t wraps, current;
  do {
    wraps = g_systick_wraps;
    current = reg(syst_cvr);
  } while (wraps != g_systick_wraps);
  return std::uint64_t(wraps) * systick_period + (current == 0 ? 0 : systick_period - current);
}

std::uint64_t cycles_per_second() noexcept { return g_core_hz; }

std::uint64_t now_ns() noexcept {
  const std::uint64_t c = cycles(), hz = g_core_hz;
  return c / hz * 1000000000u + c % hz * 1000000000u / hz;
}

const char* name() noexcept { return "cortex_m"; }

// No threads: parallel_for runs every item on the caller, in order, in slot 0.
void parallel_for(std::size_t items, std::size_t, ParallelTask task, void* context) noexcept {
  for (std::size_t i = 0; i < items; ++i) task(context, i, 0);
}
std::size_t workers() noexcept { return 1; }
std::size_t start_workers(std::size_t) noexcept { return 1; }

}  // namespace emha::port

// SPDX-License-Identifier: Apache-2.0
// Start-up code and vector table of emha's Cortex-M firmware (test firmware, device benchmarks).
// Reset: FPU (and MVE) on, .data copied from flash, .bss zeroed, static constructors, main(),
// then a semihosting exit with main's return value. A fault prints its registers and exits with
// status 3, so that a crash under qemu ends the run instead of hanging it.
// The memory layout comes from ports/cortex_m/ld/<board>.ld (the symbols below).

#include <cstdint>

#include "console.hpp"
#include "semihosting.hpp"

int main();

extern "C" {

// From the linker script.
extern char __stack_top[];
extern std::uint32_t __data_load[], __data_start[], __data_end[], __bss_start[], __bss_end[];
using InitFunction = void (*)();
extern InitFunction __preinit_array_start[], __preinit_array_end[];
extern InitFunction __init_array_start[], __init_array_end[];

void Reset_Handler() noexcept;
void emha_fault_entry() noexcept;
// Exceptions a firmware may handle itself (strong definitions replace these); SysTick is the
// cortex_m port's when its cycle counter falls back to SysTick.
void NMI_Handler() noexcept __attribute__((weak, alias("emha_fault_entry")));
void HardFault_Handler() noexcept __attribute__((weak, alias("emha_fault_entry")));
void MemManage_Handler() noexcept __attribute__((weak, alias("emha_fault_entry")));
void BusFault_Handler() noexcept __attribute__((weak, alias("emha_fault_entry")));
void UsageFault_Handler() noexcept __attribute__((weak, alias("emha_fault_entry")));
void SecureFault_Handler() noexcept __attribute__((weak, alias("emha_fault_entry")));
void SVC_Handler() noexcept __attribute__((weak, alias("emha_fault_entry")));
void DebugMon_Handler() noexcept __attribute__((weak, alias("emha_fault_entry")));
void PendSV_Handler() noexcept __attribute__((weak, alias("emha_fault_entry")));
void SysTick_Handler() noexcept __attribute__((weak, alias("emha_fault_entry")));

// The architecture's 16 system entries; the firmware enables no external interrupt.
struct VectorTable {
  void* initial_stack;
  InitFunction handlers[15];
};
__attribute__((section(".vectors"), used)) const VectorTable emha_vector_table = {
    __stack_top,
    {Reset_Handler, NMI_Handler, HardFault_Handler, MemManage_Handler, BusFault_Handler,
     UsageFault_Handler, SecureFault_Handler, nullptr, nullptr, nullptr, SVC_Handler,
     DebugMon_Handler, nullptr, PendSV_Handler, SysTick_Handler}};

[[noreturn]] void emha_start() noexcept;
[[noreturn]] void emha_fault_report(const std::uint32_t* frame) noexcept;

// Naked: no compiler-generated code may touch a floating-point register before CPACR allows it
// (a UsageFault otherwise). The hardware has already loaded SP from the vector table.
__attribute__((naked)) void Reset_Handler() noexcept {
#if defined(__ARM_FP) || defined(__ARM_FEATURE_MVE)
  asm volatile(
      "movw r0, #0xED88\n"        // CPACR
      "movt r0, #0xE000\n"
      "ldr r1, [r0]\n"
      "orr r1, r1, #0x00F00000\n"  // CP10 and CP11 (FPU; MVE on armv8.1-M): full access
      "str r1, [r0]\n"
      "dsb\n"
      "isb\n");
#endif
  asm volatile("b emha_start\n");
}

void emha_start() noexcept {
  for (std::uint32_t *src = __data_load, *dst = __data_start; dst < __data_end;) *dst++ = *src++;
  for (std::uint32_t* p = __bss_start; p < __bss_end;) *p++ = 0;
  for (InitFunction* f = __preinit_array_start; f < __preinit_array_end; ++f) (*f)();
  for (InitFunction* f = __init_array_start; f < __init_array_end; ++f) (*f)();
  emha::cortex_m::semihosting::exit(main());
}

// Passes the stacked exception frame (r0-r3, r12, lr, pc, xpsr) of the faulting code.
__attribute__((naked)) void emha_fault_entry() noexcept {
  asm volatile(
      "tst lr, #4\n"
      "ite eq\n"
      "mrseq r0, msp\n"
      "mrsne r0, psp\n"
      "b emha_fault_report\n");
}

void emha_fault_report(const std::uint32_t* frame) noexcept {
  std::uint32_t ipsr;
  asm volatile("mrs %0, ipsr" : "=r"(ipsr));
  const auto scs = [](std::uintptr_t a) { return *reinterpret_cast<volatile std::uint32_t*>(a); };
  emha::cortex_m::Line() << "emha firmware: exception " << (ipsr & 0x1ff) << " pc "
                         << emha::cortex_m::Hex{frame[6]} << " lr " << emha::cortex_m::Hex{frame[5]}
                         << " cfsr " << emha::cortex_m::Hex{scs(0xE000ED28)} << " hfsr "
                         << emha::cortex_m::Hex{scs(0xE000ED2C)} << " bfar "
                         << emha::cortex_m::Hex{scs(0xE000ED38)};
  emha::cortex_m::semihosting::exit(3);
}

// newlib's abort() and exit() end here.
void _exit(int status) { emha::cortex_m::semihosting::exit(status); }

}  // extern "C"

// SPDX-License-Identifier: Apache-2.0
// The stack probe of tests/support/stack_use.hpp: the free stack below the caller is painted
// with a pattern, the call runs, and the deepest word that no longer holds the pattern marks its
// high-water.

#include "support/stack_use.hpp"

#include <cstdint>

// From the board's linker script (ports/cortex_m/ld): the stack is [__stack_top - __stack_size,
// __stack_top); __stack_size is an absolute symbol, its "address" is the size.
extern "C" char __stack_top[];
extern "C" char __stack_size[];

namespace emha::test {

[[gnu::noinline]] std::size_t stack_bytes_used(void (*fn)(void*), void* context) noexcept {
  constexpr std::uint32_t pattern = 0x5EEDF00Du;
  volatile std::uint32_t* const bottom = reinterpret_cast<volatile std::uint32_t*>(
      __stack_top - reinterpret_cast<std::uintptr_t>(__stack_size));
  std::uint32_t* sp;
  asm volatile("mov %0, sp" : "=r"(sp));
  // Everything below this frame, but a few words of slack: the loop calls nothing.
  volatile std::uint32_t* const limit = sp - 4;
  for (volatile std::uint32_t* p = bottom; p < limit; ++p) *p = pattern;
  // Interrupts masked while fn runs: an exception frame (8 words, 26 with FP context) and its
  // handler land on this stack too (the cortex_m port's SysTick does), and they are not fn's.
  std::uint32_t primask;
  asm volatile("mrs %0, primask\n cpsid i" : "=r"(primask)::"memory");
  fn(context);
  asm volatile("msr primask, %0" ::"r"(primask) : "memory");
  volatile std::uint32_t* p = bottom;
  while (p < limit && *p == pattern) ++p;
  return static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(sp) - reinterpret_cast<std::uintptr_t>(p));
}

}  // namespace emha::test

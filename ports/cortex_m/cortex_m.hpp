// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the cortex_m port adds to emha/port.hpp: the core clock it reports and which counter
// cycles() reads. Include from firmware that links emha built with EMHA_PORT=cortex_m.

#include <cstdint>

namespace emha::cortex_m {

// Core clock in Hz for cycles_per_second() and now_ns(). The default is EMHA_CORTEX_M_CORE_HZ
// (the toolchain file's board clock); call this after changing the clock tree.
void set_core_clock_hz(std::uint32_t hz) noexcept;

// "dwt" (DWT->CYCCNT, core cycles), "systick" (SysTick at the core clock, the fallback when the
// core has no cycle counter, e.g. under qemu) or "none" before the first cycles() call.
const char* cycle_counter() noexcept;

}  // namespace emha::cortex_m

#pragma once
// Platform hooks: declared once here, defined per platform in ports/<name>/port.cpp
// (chosen by the CMake option EMHA_PORT). lib/ calls nothing platform-specific but these.

#include <cstdint>

namespace emha::port {

// Called when a precondition is violated (EMHA_CHECKS=1). Must not return.
[[noreturn]] void abort(const char* file, int line, const char* message) noexcept;

// Writes one line of diagnostics (no trailing newline needed). May do nothing.
void log(const char* message) noexcept;

// Monotonic time in nanoseconds; 0 on a port without a clock.
std::uint64_t now_ns() noexcept;

// A free-running cycle (or tick) counter and its frequency in Hz; both 0 when unavailable.
std::uint64_t cycles() noexcept;
std::uint64_t cycles_per_second() noexcept;

// The port's name ("posix", "cortex_m", "none").
const char* name() noexcept;

}  // namespace emha::port

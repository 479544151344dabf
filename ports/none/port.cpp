// Reference port with no clock and no output: the minimum a new platform must provide.
// abort() spins, since there is nothing to return to.

#include "emha/port.hpp"

namespace emha::port {

void abort(const char*, int, const char*) noexcept {
  for (;;) {
  }
}

void log(const char*) noexcept {}
std::uint64_t now_ns() noexcept { return 0; }
std::uint64_t cycles() noexcept { return 0; }
std::uint64_t cycles_per_second() noexcept { return 0; }
const char* name() noexcept { return "none"; }

}  // namespace emha::port

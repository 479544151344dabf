// SPDX-License-Identifier: Apache-2.0
// Must NOT link: with the heap gate (emha_cortex_m_executable(... HEAP_GATE)) this malloc becomes
// "undefined reference to `__wrap_malloc'". tests/firmware/CMakeLists.txt expects exactly that.
#include <cstdlib>

int main() {
  void* volatile p = std::malloc(16);
  return p != nullptr;
}

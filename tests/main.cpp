// SPDX-License-Identifier: Apache-2.0
// The doctest main of emha's test executables. --emha-isa=NAME runs the whole suite on that
// kernel variant (emha::select_simd_isa, before anything else of emha runs); when this CPU cannot
// run it the executable exits with 77, which ctest reports as skipped (SKIP_RETURN_CODE).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>

#include "emha/simd.hpp"
#include "support/selected_isa.hpp"

namespace emha::test {
const char* selected_isa = nullptr;
}  // namespace emha::test

int main(int argc, char** argv) {
  constexpr const char* option = "--emha-isa=";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], option, std::strlen(option)) != 0) continue;
    const char* isa = argv[i] + std::strlen(option);
    if (emha::select_simd_isa(isa) != emha::Status::ok) {
      std::printf("emha: kernel variant %s does not run here (CPU or build): skipped\n", isa);
      return 77;
    }
    emha::test::selected_isa = isa;
  }
  doctest::Context context(argc, argv);
  return context.run();
}

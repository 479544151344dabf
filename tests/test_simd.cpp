// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <cstring>
#include <initializer_list>
#include <string>

#include "emha/simd.hpp"
#include "support/selected_isa.hpp"

// EMHA_EXPECTED_ISA comes from the build (toolchain files set it per target; a dispatching
// x86-64 build reads the best variant the build machine's CPU has), so a build that silently
// fell back to a narrower variant or the scalar path cannot pass as the wider one.
TEST_CASE("the kernels run on the instruction set expected here") {
  const char* expected = emha::test::selected_isa ? emha::test::selected_isa : EMHA_EXPECTED_ISA;
  INFO("simd_isa() = " << std::string(emha::simd_isa()) << ", expected " << std::string(expected));
  CHECK(std::strcmp(emha::simd_isa(), expected) == 0);
  const bool scalar = std::strcmp(emha::simd_isa(), "scalar") == 0;
  CHECK((emha::simd_f32_lanes() == 1) == scalar);
}

// The full-integer kernels choose apart (dispatch/choice_x86.cpp): the VNNI variant where the CPU
// runs it, unless --emha-isa pinned a variant first (then that one).
TEST_CASE("the full-integer kernels run on the instruction set expected here") {
  const char* expected = emha::test::selected_isa ? emha::test::selected_isa : EMHA_EXPECTED_ISA_S8;
  INFO("simd_isa_s8() = " << std::string(emha::simd_isa_s8()) << ", expected " << std::string(expected));
  CHECK(std::strcmp(emha::simd_isa_s8(), expected) == 0);
}

TEST_CASE("the variant in use is fixed: selecting it again is ok, another is refused") {
  const char* in_use = emha::simd_isa();
  CHECK(emha::select_simd_isa(in_use) == emha::Status::ok);
  CHECK(std::strcmp(emha::simd_isa(), in_use) == 0);
  for (const char* other : {"sse2", "avx2", "avx2vnni", "avx512", "avx512vnni", "arm64+neon", "scalar", "no-such-isa"}) {
    if (std::strcmp(other, in_use) == 0) continue;
    CHECK(emha::select_simd_isa(other) == emha::Status::invalid_argument);
  }
  CHECK(emha::select_simd_isa(nullptr) != emha::Status::ok);
  CHECK(std::strcmp(emha::simd_isa(), in_use) == 0);
}

#include <doctest/doctest.h>

#include <cstring>

#include "emha/simd.hpp"

// EMHA_EXPECTED_ISA comes from the build (toolchain files set it per target), so a build that
// silently fell back to the scalar path cannot pass as a SIMD one.
TEST_CASE("the build uses the instruction set its target expects") {
  INFO("simd_isa() = " << emha::simd_isa() << ", expected " << EMHA_EXPECTED_ISA);
  CHECK(std::strcmp(emha::simd_isa(), EMHA_EXPECTED_ISA) == 0);
  const bool scalar = std::strcmp(emha::simd_isa(), "scalar") == 0;
  CHECK((emha::simd_f32_lanes() == 1) == scalar);
}

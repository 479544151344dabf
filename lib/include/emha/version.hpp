// SPDX-License-Identifier: Apache-2.0
#pragma once
// emha's version: the one project(emha VERSION ...) in the top-level CMakeLists.txt declares
// (tests/test_version.cpp fails the build when the two differ).

#define EMHA_VERSION_MAJOR 0
#define EMHA_VERSION_MINOR 2
#define EMHA_VERSION_PATCH 0
#define EMHA_VERSION_STRING "0.2.0"
// One number that orders versions, for #if: major * 10000 + minor * 100 + patch.
#define EMHA_VERSION (EMHA_VERSION_MAJOR * 10000 + EMHA_VERSION_MINOR * 100 + EMHA_VERSION_PATCH)

namespace emha {

// "MAJOR.MINOR.PATCH" of the library this code was compiled against.
constexpr const char* version() noexcept { return EMHA_VERSION_STRING; }

}  // namespace emha

// SPDX-License-Identifier: Apache-2.0
// emha/version.hpp against the version project() declares in the top-level CMakeLists.txt, which
// passes it to this file alone as EMHA_PROJECT_VERSION_MAJOR/MINOR/PATCH: a version bumped in
// one place only fails the build.
#include <emha/version.hpp>

#include <doctest/doctest.h>

#if !defined(EMHA_PROJECT_VERSION_MAJOR) || !defined(EMHA_PROJECT_VERSION_MINOR) || \
    !defined(EMHA_PROJECT_VERSION_PATCH)
#error "the top-level CMakeLists.txt passes EMHA_PROJECT_VERSION_MAJOR/MINOR/PATCH to this file"
#endif

namespace {

constexpr bool same(const char* a, const char* b) {
  while (*a != '\0' && *a == *b) {
    ++a;
    ++b;
  }
  return *a == *b;
}

#define EMHA_TEST_STR2(x) #x
#define EMHA_TEST_STR(x) EMHA_TEST_STR2(x)
constexpr const char* project_version = EMHA_TEST_STR(EMHA_PROJECT_VERSION_MAJOR) "." EMHA_TEST_STR(
    EMHA_PROJECT_VERSION_MINOR) "." EMHA_TEST_STR(EMHA_PROJECT_VERSION_PATCH);

static_assert(EMHA_VERSION_MAJOR == EMHA_PROJECT_VERSION_MAJOR,
              "EMHA_VERSION_MAJOR (emha/version.hpp) differs from project(emha VERSION ...)");
static_assert(EMHA_VERSION_MINOR == EMHA_PROJECT_VERSION_MINOR,
              "EMHA_VERSION_MINOR (emha/version.hpp) differs from project(emha VERSION ...)");
static_assert(EMHA_VERSION_PATCH == EMHA_PROJECT_VERSION_PATCH,
              "EMHA_VERSION_PATCH (emha/version.hpp) differs from project(emha VERSION ...)");
static_assert(same(EMHA_VERSION_STRING, project_version),
              "EMHA_VERSION_STRING (emha/version.hpp) is not MAJOR.MINOR.PATCH of project()");
static_assert(same(emha::version(), EMHA_VERSION_STRING),
              "emha::version() is not EMHA_VERSION_STRING");
static_assert(EMHA_VERSION_MINOR < 100 && EMHA_VERSION_PATCH < 100,
              "EMHA_VERSION orders versions only while minor and patch stay below 100");
static_assert(EMHA_VERSION ==
                  EMHA_VERSION_MAJOR * 10000 + EMHA_VERSION_MINOR * 100 + EMHA_VERSION_PATCH,
              "EMHA_VERSION is not major * 10000 + minor * 100 + patch");

}  // namespace

TEST_CASE("emha/version.hpp says the version project() declares") {
  CHECK(same(emha::version(), project_version));
  CHECK(EMHA_VERSION == EMHA_PROJECT_VERSION_MAJOR * 10000 + EMHA_PROJECT_VERSION_MINOR * 100 +
                            EMHA_PROJECT_VERSION_PATCH);
}

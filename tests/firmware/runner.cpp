// SPDX-License-Identifier: Apache-2.0
#include "runner.hpp"

namespace fw {
namespace {
unsigned g_checks = 0, g_failures = 0;
const char* g_suite = "";
}  // namespace

bool check(bool ok, const char* what) noexcept {
  ++g_checks;
  if (!ok) {
    ++g_failures;
    Line() << "FAIL " << g_suite << ": " << what;
  }
  return ok;
}

unsigned checks() noexcept { return g_checks; }
unsigned failures() noexcept { return g_failures; }

Suite::Suite(const char* name) noexcept
    : name_(name), checks_at_start_(g_checks), failures_at_start_(g_failures) {
  g_suite = name;
}

Suite::~Suite() {
  Line() << "[" << name_ << "] " << g_checks - checks_at_start_ << " checks, "
         << g_failures - failures_at_start_ << " failed";
}

}  // namespace fw

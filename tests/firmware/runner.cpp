// SPDX-License-Identifier: Apache-2.0
// The firmware's side of tests/support/unit.hpp: the run list, the open contexts and the counts,
// all in static storage.

#include <cstring>

#include "support/unit.hpp"

namespace emha::unit {
namespace {
Case* g_first = nullptr;
Case* g_last = nullptr;
const Context* g_innermost = nullptr;
const char* g_case = "";
unsigned g_checks = 0, g_failures = 0;

// The file's name without its directories: the line holds 200 characters.
const char* base_name(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

void print_contexts(const Context* c) {
  if (!c) return;
  c->print();
}
}  // namespace

Case::Case(const char* case_name, void (*case_run)()) noexcept : name(case_name), run(case_run) {
  (g_last ? g_last->next : g_first) = this;
  g_last = this;
}

Context::Context(void (*format)(const Context&, Line&)) noexcept : format_(format), outer_(g_innermost) {
  g_innermost = this;
}
Context::~Context() { g_innermost = outer_; }

// Outermost first: the outer contexts, then this one.
void Context::print() const noexcept {
  if (outer_) outer_->print();
  Line line;
  line << "    ";
  format_(*this, line);
}

bool check(bool ok, const char* expr, const char* file, int line) noexcept {
  ++g_checks;
  if (!ok) {
    ++g_failures;
    Line() << "FAIL " << g_case << ": " << base_name(file) << ":" << line << ": " << expr;
    print_contexts(g_innermost);
  }
  return ok;
}

void run_all() noexcept {
  for (Case* c = g_first; c; c = c->next) {
    const unsigned checks_before = g_checks, failures_before = g_failures;
    g_case = c->name;
    c->run();
    Line() << "[" << c->name << "] " << g_checks - checks_before << " checks, " << g_failures - failures_before
           << " failed";
  }
}

unsigned checks() noexcept { return g_checks; }
unsigned failures() noexcept { return g_failures; }

}  // namespace emha::unit

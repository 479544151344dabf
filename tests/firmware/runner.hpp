// SPDX-License-Identifier: Apache-2.0
#pragma once
// The test firmware's runner: doctest needs an OS, this needs a console. A check that fails
// prints one line and is counted; main() returns the count, which the start-up code hands to
// the host as the exit status (semihosting SYS_EXIT_EXTENDED).

#include "console.hpp"

namespace fw {

using emha::cortex_m::Line;

// Counts one check. A failed one prints "FAIL <suite>: <what>" and returns false, so that the
// caller can add a line of context:  if (!fw::check(bad == 0, "gemm_f32")) Line() << "  m=" << m;
bool check(bool ok, const char* what) noexcept;

// Checks and failures so far, over all suites.
unsigned checks() noexcept;
unsigned failures() noexcept;

// A group of checks: prints "[name] <checks> checks, <failures> failed" when it ends.
class Suite {
 public:
  explicit Suite(const char* name) noexcept;
  ~Suite();
  Suite(const Suite&) = delete;
  Suite& operator=(const Suite&) = delete;

 private:
  const char* name_;
  unsigned checks_at_start_, failures_at_start_;
};

// The suites (one file each).
void test_port();
void test_gemm();
void test_softmax();
void test_mask();
void test_norm_rope();
void test_parity();
void test_seed_parity();
void test_kv_cache();
void test_export();

}  // namespace fw

// SPDX-License-Identifier: Apache-2.0
#pragma once
// One test source for the host and the Cortex-M firmware. Kernel and layer tests are written
// over these macros; on the host they are doctest's, on the firmware (EMHA_TEST_FIRMWARE, doctest
// needs an OS) a runner that needs no heap:
//
//   EMHA_TEST_CASE("name") { ... }     TEST_CASE: registered in static storage before main, run in
//                                      the order registered (file by file, top to bottom)
//   EMHA_CHECK(cond)                   CHECK: counted; a failure prints one line and goes on
//   EMHA_CHECK_MESSAGE(cond, a << b)   CHECK_MESSAGE: the failure line is followed by the message
//   EMHA_INFO(a << b)                  INFO: context for the failures of the enclosing scope,
//                                      formatted only when one fails
//   EMHA_MESSAGE(a << b)               MESSAGE: printed now
//
// A message is a chain of `<<` over strings, integers and floating-point numbers (the firmware
// console's emha::cortex_m::Line takes those; no std::string). There is no REQUIRE: without
// exceptions the firmware cannot leave a test case from a helper, so a shared test goes on
// safely after a failed check. emha::test::on_firmware lets a test pick sizes that fit the
// board's RAM.

#ifdef EMHA_TEST_FIRMWARE

#include "console.hpp"

namespace emha::unit {

using Line = emha::cortex_m::Line;

// A test case: a function and its name, linked into the run list by its constructor (static
// initialization, before main).
struct Case {
  Case(const char* name, void (*run)()) noexcept;
  const char* name;
  void (*run)();
  Case* next = nullptr;
};

// A scope's context line (EMHA_INFO): pushed on construction, popped on destruction; a failed
// check prints every open one, outermost first.
class Context {
 public:
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  void print() const noexcept;

 protected:
  explicit Context(void (*format)(const Context&, Line&)) noexcept;
  ~Context();

 private:
  void (*format_)(const Context&, Line&);
  const Context* outer_;
};

template <class F>
class Info : public Context {
 public:
  explicit Info(F format) noexcept
      : Context([](const Context& c, Line& line) { static_cast<const Info&>(c).format_(line); }), format_(format) {}

 private:
  F format_;
};

// Counts a check; a failed one prints "FAIL <case>: <file>:<line>: <expr>" and the open contexts,
// and returns false (the caller then prints its message).
bool check(bool ok, const char* expr, const char* file, int line) noexcept;

// Runs every registered case: "[name] <checks> checks, <failures> failed" after each.
void run_all() noexcept;
unsigned checks() noexcept;
unsigned failures() noexcept;

}  // namespace emha::unit

#define EMHA_UNIT_CAT2(a, b) a##b
#define EMHA_UNIT_CAT(a, b) EMHA_UNIT_CAT2(a, b)
#define EMHA_UNIT_NAME(prefix) EMHA_UNIT_CAT(prefix, __LINE__)

#define EMHA_TEST_CASE(name)                                                                         \
  static void EMHA_UNIT_NAME(emha_test_case_)();                                                     \
  static ::emha::unit::Case EMHA_UNIT_NAME(emha_test_case_entry_)(name, &EMHA_UNIT_NAME(emha_test_case_)); \
  static void EMHA_UNIT_NAME(emha_test_case_)()
#define EMHA_CHECK(...) static_cast<void>(::emha::unit::check(static_cast<bool>(__VA_ARGS__), #__VA_ARGS__, __FILE__, __LINE__))
#define EMHA_CHECK_MESSAGE(cond, ...)                                                      \
  do {                                                                                     \
    if (!::emha::unit::check(static_cast<bool>(cond), #cond, __FILE__, __LINE__)) {        \
      ::emha::unit::Line emha_unit_line;                                                   \
      emha_unit_line << "  " << __VA_ARGS__;                                               \
    }                                                                                      \
  } while (false)
#define EMHA_INFO(...) \
  const ::emha::unit::Info EMHA_UNIT_NAME(emha_info_)([&](::emha::unit::Line& emha_unit_line) { emha_unit_line << __VA_ARGS__; })
#define EMHA_MESSAGE(...)                                   \
  do {                                                      \
    ::emha::unit::Line emha_unit_line;                      \
    emha_unit_line << "  " << __VA_ARGS__;                  \
  } while (false)

namespace emha::test {
inline constexpr bool on_firmware = true;
}  // namespace emha::test

#else  // the host: doctest

#include <doctest/doctest.h>

#include <ostream>
#include <sstream>

// Messages go through a std::ostream, as on the firmware: doctest's own streaming prints a
// `const char*` variable as an address.
#define EMHA_UNIT_TEXT(...) ::emha::unit::text([&](std::ostream& emha_unit_os) { emha_unit_os << __VA_ARGS__; })
#define EMHA_TEST_CASE(name) TEST_CASE(name)
#define EMHA_CHECK(...) CHECK(__VA_ARGS__)
#define EMHA_CHECK_MESSAGE(cond, ...) CHECK_MESSAGE(cond, EMHA_UNIT_TEXT(__VA_ARGS__))
#define EMHA_INFO(...) INFO(EMHA_UNIT_TEXT(__VA_ARGS__))
#define EMHA_MESSAGE(...) MESSAGE(EMHA_UNIT_TEXT(__VA_ARGS__))

namespace emha::unit {
template <class Write>
doctest::String text(Write&& write) {
  std::ostringstream os;
  write(os);
  return doctest::String(os.str().c_str());
}
}  // namespace emha::unit

namespace emha::test {
inline constexpr bool on_firmware = false;
}  // namespace emha::test

#endif

// SPDX-License-Identifier: Apache-2.0
#pragma once

namespace emha::test {
// The kernel variant the suite was pinned to with --emha-isa=NAME (tests/main.cpp), or null:
// then emha chose, and the build's EMHA_EXPECTED_ISA says what it should have chosen.
extern const char* selected_isa;
}  // namespace emha::test

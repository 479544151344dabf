// SPDX-License-Identifier: Apache-2.0
// Must not compile: see tests/CMakeLists.txt (fail_cases).
#include <emha/emha.hpp>

struct Bad : emha::MhaConfig<32, 0, 8> {
  static constexpr emha::Arithmetic arithmetic = emha::Arithmetic::s8;
};
emha::MultiHeadAttention<Bad> mha;

// SPDX-License-Identifier: Apache-2.0
// Must not compile: see tests/CMakeLists.txt (fail_cases).
#include <emha/emha.hpp>

struct Bad : emha::MhaConfig<32, 4, 8> {
  static constexpr emha::Arithmetic arithmetic = emha::Arithmetic::s8;
  static constexpr emha::Position position = emha::Position::rope;
};
emha::MultiHeadAttention<Bad> mha;

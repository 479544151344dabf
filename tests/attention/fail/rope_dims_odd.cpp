// SPDX-License-Identifier: Apache-2.0
// Must not compile: see tests/CMakeLists.txt (fail_cases).
#include <emha/emha.hpp>

struct Bad : emha::MhaConfig<64, 4, 8> {
  static constexpr emha::Position position = emha::Position::rope;
  static constexpr std::size_t rope_dims = 7;
};
emha::MultiHeadAttention<Bad> mha;

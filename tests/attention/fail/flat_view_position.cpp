// SPDX-License-Identifier: Apache-2.0
// Must not compile: see tests/CMakeLists.txt (fail_cases).
#include <emha/emha.hpp>

struct Bad : emha::MhaConfig<32, 4, 8> {
  static constexpr emha::HeadSplit head_split = emha::HeadSplit::flat_view;
  static constexpr emha::Position position = emha::Position::rope;
};
emha::MultiHeadAttention<Bad> mha;

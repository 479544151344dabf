// SPDX-License-Identifier: Apache-2.0
// Must not compile: see tests/CMakeLists.txt (fail_cases).
#include <emha/emha.hpp>

struct Bad : emha::MhaConfig<32, 4, 8> {
  static constexpr std::size_t head_dim = 6;  // d_model / heads would be 8
  static constexpr emha::Position position = emha::Position::rope;
  static constexpr std::size_t rope_dims = 8;
};
emha::MultiHeadAttention<Bad> mha;

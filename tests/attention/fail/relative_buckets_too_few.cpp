// SPDX-License-Identifier: Apache-2.0
// Must not compile: see tests/CMakeLists.txt (fail_cases).
#include <emha/emha.hpp>

struct Bad : emha::MhaConfig<32, 4, 8> {
  static constexpr emha::Position position = emha::Position::relative_bias;
  static constexpr std::size_t relative_buckets = 2;  // bidirectional: 1 exact bucket a side
};
emha::MultiHeadAttention<Bad> mha;

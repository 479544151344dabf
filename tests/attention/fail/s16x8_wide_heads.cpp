// SPDX-License-Identifier: Apache-2.0
// Must not compile: see tests/CMakeLists.txt (fail_cases).
#include <emha/emha.hpp>

struct Bad : emha::MhaConfig<32, 4, 8> {
  static constexpr emha::Arithmetic arithmetic = emha::Arithmetic::s16x8;
  static constexpr std::size_t head_dim = std::size_t(1) << 14;  // q_dim 2^16: sums past TFLite's int64 range
};
emha::MultiHeadAttention<Bad> mha;

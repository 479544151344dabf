// SPDX-License-Identifier: Apache-2.0
// Must not compile: see tests/CMakeLists.txt (fail_cases).
#include <emha/emha.hpp>

struct Bad : emha::MhaConfig<32, 4, 64> {
  static constexpr emha::Position position = emha::Position::rope;
  static constexpr emha::RopeScalingParams rope_scaling = emha::rope_dynamic(2.0f, 32);  // 64 > 32
};
emha::MultiHeadAttention<Bad> mha;

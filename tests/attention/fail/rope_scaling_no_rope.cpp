// SPDX-License-Identifier: Apache-2.0
// Must not compile: see tests/CMakeLists.txt (fail_cases).
#include <emha/emha.hpp>

struct Bad : emha::MhaConfig<32, 4, 8> {
  static constexpr emha::RopeScalingParams rope_scaling = emha::rope_llama3(8.0f, 1.0f, 4.0f, 8192);
};
emha::MultiHeadAttention<Bad> mha;

// SPDX-License-Identifier: Apache-2.0
// Must not compile: see tests/CMakeLists.txt (fail_cases).
#include <emha/emha.hpp>

struct Bad : emha::MhaConfig<32, 4, 8> {
  static constexpr emha::Arithmetic arithmetic = emha::Arithmetic::s8;
  static constexpr float attn_logit_softcapping = 50.0f;
};
emha::MultiHeadAttention<Bad> mha;

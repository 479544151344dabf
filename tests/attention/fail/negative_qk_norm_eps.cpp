// SPDX-License-Identifier: Apache-2.0
// Must not compile: see tests/CMakeLists.txt (fail_cases).
#include <emha/emha.hpp>

struct Bad : emha::MhaConfig<32, 4, 8> {
  static constexpr emha::QkNorm qk_norm = emha::QkNorm::per_head;
  static constexpr float qk_norm_eps = -1e-6f;
};
emha::MultiHeadAttention<Bad> mha;

// SPDX-License-Identifier: Apache-2.0
// Must not compile: see tests/CMakeLists.txt (fail_cases).
#include <emha/emha.hpp>

struct Bad : emha::MhaConfig<64, 4, 8> {
  static constexpr emha::NormPlacement norm = emha::NormPlacement::post;
  static constexpr float norm_eps = -1e-5f;
};
emha::MultiHeadAttention<Bad> mha;

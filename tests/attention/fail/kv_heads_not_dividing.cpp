// SPDX-License-Identifier: Apache-2.0
// Must not compile: see tests/CMakeLists.txt (fail_cases). 8 query heads cannot share 3 K/V heads.
#include <emha/emha.hpp>

struct Bad : emha::MhaConfig<64, 8, 8> {
  static constexpr std::size_t kv_heads = 3;
};
emha::MultiHeadAttention<Bad> mha;

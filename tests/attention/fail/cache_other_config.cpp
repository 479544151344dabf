// SPDX-License-Identifier: Apache-2.0
// Must not compile: see tests/CMakeLists.txt (fail_cases). A KvCache of another Config (here a
// different kv_heads) cannot be passed to forward().
#include <emha/emha.hpp>

struct A : emha::MhaConfig<64, 8, 8> {};
struct B : emha::MhaConfig<64, 8, 8> {
  static constexpr std::size_t kv_heads = 2;
};
static float x[64], y[64];

int f() {
  static emha::MultiHeadAttention<A> mha;
  static emha::KvCache<B> cache;
  return int(mha.forward({1, 1, 1}, x, y, cache));
}

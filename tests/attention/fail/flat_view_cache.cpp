// SPDX-License-Identifier: Apache-2.0
// Must not compile: see tests/CMakeLists.txt (fail_cases).
#include <emha/emha.hpp>

struct Cfg : emha::MhaConfig<32, 4, 8> {
  static constexpr emha::HeadSplit head_split = emha::HeadSplit::flat_view;
};
emha::KvCache<Cfg> cache;

// SPDX-License-Identifier: Apache-2.0
// Must not compile: see tests/CMakeLists.txt (fail_cases).
#include <emha/emha.hpp>

struct Bad : emha::MhaConfig<64, 0, 8> {};
emha::MultiHeadAttention<Bad> mha;

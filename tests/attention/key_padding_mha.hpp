// SPDX-License-Identifier: Apache-2.0
#pragma once
// The layer the behaviour tests (test_mha.cpp, test_mha_bad_input.cpp) run: the key_padding
// fixture's config (d_model 32, 4 heads, S_q 6, S_kv 9, batch 2) with its PyTorch weights.

#include <doctest/doctest.h>

#include <memory>

#include "attention/fixture_support.hpp"
#include "fixtures/key_padding.hpp"

namespace emha::test::key_padding_mha {

using F = emha::fixtures::key_padding;
using Cfg = FixtureConfig<F>;
using Mha = MultiHeadAttention<Cfg>;
inline constexpr std::size_t D = F::d_model;

inline std::unique_ptr<Mha> make_mha() {
  auto mha = std::make_unique<Mha>();
  REQUIRE(mha->set_weights(fixture_weights<F>()) == Status::ok);
  return mha;
}

}  // namespace emha::test::key_padding_mha

// SPDX-License-Identifier: Apache-2.0
// rope_f32 and xpos_f32 against PyTorch on the host, with doctest's template test cases
// (tests/kernels/fixtures/kernels.hpp: Hugging Face's rotary embedding, both pairings, partial
// rotary, Llama 3's base, a position past 4096; torchscale's XPOS). The sweeps against the scalar
// reference and float64 math and the refused inputs are test_rope.cpp's.

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "emha/kernels/rope.hpp"
#include "emha/kernels/rope_ref.hpp"
#include "fixtures/kernels.hpp"
#include "support/numeric.hpp"
#include "support/parity_errors.hpp"

namespace {

using emha::RopePairing;
using emha::RopeTable;
using emha::Status;
using emha::test::parity_errors;
using emha::test::ParityErrors;
using emha::test::u32;

struct Table {
  Table(std::size_t positions, std::size_t d_rot, float base)
      : cos(emha::rope_table_floats(positions, d_rot)), sin(cos.size()) {
    status = emha::rope_table_f32(positions, d_rot, base, cos.data(), sin.data());
    view = {cos.data(), sin.data(), positions, d_rot};
  }
  std::vector<float> cos, sin;
  RopeTable view{};
  Status status;
};

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("rope_f32 matches Hugging Face's rotary embedding", F, rope_parity) {
  Table t(F::pos0 + F::rows, F::d_rot, F::base);
  REQUIRE(t.status == Status::ok);
  constexpr std::size_t count = F::rows * F::heads * F::head_dim;
  std::vector<float> y(F::x, F::x + count);
  REQUIRE(emha::rope_f32(F::rows, F::heads, F::head_dim, F::pairing, F::pos0, t.view, y.data(),
                         F::heads * F::head_dim) == Status::ok);
  const ParityErrors e = parity_errors<F>(y.data(), count);
  MESSAGE("rope_f32 vs HF, last position " << F::pos0 + F::rows - 1 << ": max error against float64, emha "
                                            << e.mine << ", torch float32 " << e.theirs << "; |emha - torch| "
                                            << e.vs_torch);
  CHECK(e.mine <= 2 * e.theirs + e.top * 2 * u32);
}
TEST_CASE_TEMPLATE_APPLY(rope_parity, emha::kernel_fixtures::ropes);

TEST_CASE_TEMPLATE_DEFINE("xpos_f32 matches torchscale's XPOS", F, xpos_parity) {
  // torchscale's fixed_pos_embedding angles are HF's table at base 10000 over the whole head.
  Table t(F::n_total, F::head_dim, 10000.0f);
  REQUIRE(t.status == Status::ok);
  constexpr std::size_t count = F::rows * F::heads * F::head_dim;
  std::vector<float> y(F::x, F::x + count);
  REQUIRE(emha::xpos_f32(F::rows, F::heads, F::head_dim, F::n_total, F::downscale, 512.0f, t.view, y.data(),
                         F::heads * F::head_dim) == Status::ok);
  const ParityErrors e = parity_errors<F>(y.data(), count);
  MESSAGE("xpos_f32 vs torchscale, " << F::n_total << " positions, downscale " << F::downscale
                                      << ": max error against float64, emha " << e.mine << ", torch float32 "
                                      << e.theirs << "; |emha - torch| " << e.vs_torch);
  CHECK(e.mine <= 2 * e.theirs + e.top * 2 * u32);
}
TEST_CASE_TEMPLATE_APPLY(xpos_parity, emha::kernel_fixtures::xposes);

// SPDX-License-Identifier: Apache-2.0
// rope_f32 and rope_table_f32 against the scalar reference (bit for bit: same arithmetic), float64
// math and PyTorch (tests/kernels/fixtures/kernels.hpp: Hugging Face's rotary embedding, both
// pairings, partial rotary, Llama 3's base, a position past 4096).
//
// Bound against float64 (u = 2^-24): the table's angle p * inv_freq carries the float32 inv_freq
// (pow and a division: <= 3u relative) and one product (u), so |angle error| <= 4u p inv_freq
// <= 4u p; cos and sin add their own <= 2u. The rotation of pair (a, b) then errs by
//   <= (|a| + |b|) (4u (p + 1) + 4u)
// growing with the position p as HF's own float32 angles do.

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

struct RopeCase {
  std::size_t rows, heads, head_dim, d_rot, pos0, pad;
  RopePairing pairing;
  float base;
};

void check_rope(const RopeCase& c, std::uint64_t seed) {
  const std::size_t ld = c.heads * c.head_dim + c.pad;
  Table t(c.pos0 + c.rows + 3, c.d_rot, c.base);
  REQUIRE(t.status == Status::ok);
  const auto x = emha::test::uniform(c.rows * ld, seed, -2.0f, 2.0f);
  std::vector<float> y = x, y_ref = x, y64_in = x;
  REQUIRE(emha::rope_f32(c.rows, c.heads, c.head_dim, c.pairing, c.pos0, t.view, y.data(), ld) == Status::ok);
  REQUIRE(emha::rope_f32_ref(c.rows, c.heads, c.head_dim, c.pairing, c.pos0, t.view, y_ref.data(), ld) ==
          Status::ok);
  std::vector<double> y64(c.rows * c.heads * c.head_dim);
  emha::rope_f64(c.rows, c.heads, c.head_dim, c.d_rot, c.pairing, c.pos0, c.base, x.data(), ld, y64.data());
  INFO("rows=" << c.rows << " heads=" << c.heads << " head_dim=" << c.head_dim << " d_rot=" << c.d_rot
               << " pos0=" << c.pos0 << " pad=" << c.pad << " pairing=" << int(c.pairing));
  CHECK(std::memcmp(y.data(), y_ref.data(), y.size() * sizeof(float)) == 0);
  std::size_t bad = 0, pass_through_changed = 0, pad_changed = 0;
  for (std::size_t r = 0; r < c.rows; ++r) {
    for (std::size_t h = 0; h < c.heads; ++h) {
      const std::size_t o = r * ld + h * c.head_dim;
      for (std::size_t i = 0; i < c.d_rot / 2; ++i) {
        std::size_t ia, ib;
        emha::rope_pair(c.pairing, c.d_rot, i, ia, ib);
        const double tol = (std::fabs(x[o + ia]) + std::fabs(x[o + ib])) * 4 * u32 * double(c.pos0 + r + 2);
        const double* e = y64.data() + (r * c.heads + h) * c.head_dim;
        bad += !(std::fabs(y[o + ia] - e[ia]) <= tol) + !(std::fabs(y[o + ib] - e[ib]) <= tol);
      }
      for (std::size_t j = c.d_rot; j < c.head_dim; ++j) pass_through_changed += y[o + j] != x[o + j];
    }
    for (std::size_t j = c.heads * c.head_dim; j < ld; ++j) pad_changed += y[r * ld + j] != x[r * ld + j];
  }
  CHECK(bad == 0);
  CHECK(pass_through_changed == 0);
  CHECK(pad_changed == 0);
}

}  // namespace

TEST_CASE("rope_f32 over head sizes, rotary widths, positions and both pairings") {
  std::uint64_t seed = 1;
  for (RopePairing p : {RopePairing::half, RopePairing::interleaved})
    for (std::size_t d : emha::test::tail_sizes) {
      const std::size_t d_rot = d % 2 ? d + 1 : d;
      check_rope({3, 2, d_rot, d_rot, 0, 0, p, 10000.0f}, seed++);
      check_rope({2, 3, d_rot + 6, d_rot, 5, 3, p, 500000.0f}, seed++);  // partial, offset, stride
    }
  check_rope({2, 2, 128, 128, 4090, 0, RopePairing::half, 10000.0f}, seed++);
  check_rope({2, 2, 128, 64, 2000, 1, RopePairing::interleaved, 10000.0f}, seed++);
}

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

TEST_CASE("rope_f32 and rope_table_f32 refuse bad input and leave x untouched") {
  Table t(8, 8, 10000.0f);
  REQUIRE(t.status == Status::ok);
  std::vector<float> x = emha::test::uniform(4 * 16, 3);
  const std::vector<float> before = x;
  // d_rot odd, zero, or wider than a head
  RopeTable odd = t.view;
  odd.d_rot = 7;
  CHECK(emha::rope_f32(4, 2, 8, RopePairing::half, 0, odd, x.data(), 16) == Status::invalid_argument);
  RopeTable zero = t.view;
  zero.d_rot = 0;
  CHECK(emha::rope_f32(4, 2, 8, RopePairing::half, 0, zero, x.data(), 16) == Status::invalid_argument);
  CHECK(emha::rope_f32(4, 4, 4, RopePairing::half, 0, t.view, x.data(), 16) == Status::invalid_argument);
  // positions past the table
  CHECK(emha::rope_f32(4, 2, 8, RopePairing::half, 5, t.view, x.data(), 16) == Status::too_long);
  CHECK(emha::rope_f32(4, 2, 8, RopePairing::interleaved, SIZE_MAX, t.view, x.data(), 16) == Status::too_long);
  // a row stride shorter than the heads, null pointers
  CHECK(emha::rope_f32(4, 2, 8, RopePairing::half, 0, t.view, x.data(), 15) == Status::invalid_argument);
  CHECK(emha::rope_f32(4, 2, 8, RopePairing::half, 0, t.view, nullptr, 16) == Status::null_pointer);
  RopeTable no_sin = t.view;
  no_sin.sin = nullptr;
  CHECK(emha::rope_f32(4, 2, 8, RopePairing::half, 0, no_sin, x.data(), 16) == Status::null_pointer);
  CHECK(x == before);
  // the table
  float c[4], s[4];
  CHECK(emha::rope_table_f32(2, 3, 10000.0f, c, s) == Status::invalid_argument);
  CHECK(emha::rope_table_f32(2, 0, 10000.0f, c, s) == Status::invalid_argument);
  CHECK(emha::rope_table_f32(2, 4, 0.0f, c, s) == Status::invalid_argument);
  CHECK(emha::rope_table_f32(2, 4, 10000.0f, c, nullptr) == Status::null_pointer);
  CHECK(emha::rope_table_f32(2, 4, 10000.0f, c, s) == Status::ok);
  CHECK(c[0] == 1.0f);  // position 0: no rotation
  CHECK(s[1] == 0.0f);
}

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

TEST_CASE("xpos_f32 refuses bad input and leaves x untouched") {
  Table t(8, 8, 10000.0f);
  REQUIRE(t.status == Status::ok);
  std::vector<float> x = emha::test::uniform(4 * 16, 4);
  const std::vector<float> before = x;
  CHECK(emha::xpos_f32(4, 2, 6, 8, false, 512.0f, t.view, x.data(), 16) == Status::invalid_argument);  // d_rot != head_dim
  CHECK(emha::xpos_f32(4, 2, 8, 8, false, 0.0f, t.view, x.data(), 16) == Status::invalid_argument);   // scale_base
  CHECK(emha::xpos_f32(4, 2, 8, 3, false, 512.0f, t.view, x.data(), 16) == Status::too_long);  // rows > n_total
  CHECK(emha::xpos_f32(4, 2, 8, 9, true, 512.0f, t.view, x.data(), 16) == Status::too_long);   // past the table
  CHECK(emha::xpos_f32(4, 2, 8, 8, true, 512.0f, t.view, x.data(), 15) == Status::invalid_argument);
  CHECK(emha::xpos_f32(4, 2, 8, 8, true, 512.0f, t.view, nullptr, 16) == Status::null_pointer);
  CHECK(x == before);
}

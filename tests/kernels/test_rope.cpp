// SPDX-License-Identifier: Apache-2.0
// rope_f32 and rope_table_f32 against the scalar reference (bit for bit: same arithmetic) and
// float64 math, xpos_f32's scaling, and every refused input, on the host and the firmware. Static
// buffers (the host adds positions up to 4091 with 128-wide heads). PyTorch parity (Hugging
// Face's rotary embedding, torchscale's XPOS) is test_rope_host.cpp's.
//
// Bound against float64 (u = 2^-24): the table's angle p * inv_freq carries the float32 inv_freq
// (pow and a division: <= 3u relative) and one product (u), so |angle error| <= 4u p inv_freq
// <= 4u p; cos and sin add their own <= 2u. The rotation of pair (a, b) then errs by
//   <= (|a| + |b|) (4u (p + 1) + 4u)
// growing with the position p as HF's own float32 angles do.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "emha/kernels/rope.hpp"
#include "emha/kernels/rope_ref.hpp"
#include "support/numeric.hpp"
#include "support/unit.hpp"

namespace {

using emha::RopePairing;
using emha::RopeTable;
using emha::Status;
using emha::test::u32;

// Positions and widths: pos0 + rows + 3 <= 11 and d_rot <= 128 on both targets; the host adds
// positions up to 4095.
constexpr std::size_t max_positions = emha::test::on_firmware ? 11 : 4095, max_d_rot = 128;
// rows x (heads x head_dim + pad): 2 x (3 x (128 + 6) + 3) the widest, 3 x 2 x 128 the next
constexpr std::size_t max_floats = 2 * (3 * (128 + 6) + 3);

float g_cos[emha::rope_table_floats(max_positions, max_d_rot)], g_sin[emha::rope_table_floats(max_positions, max_d_rot)];
float g_x[max_floats], g_y[max_floats], g_y_ref[max_floats];
double g_y64[max_floats];

// The table of `positions` x d_rot in g_cos, g_sin.
RopeTable table(std::size_t positions, std::size_t d_rot, float base, Status& status) {
  status = emha::rope_table_f32(positions, d_rot, base, g_cos, g_sin);
  return {g_cos, g_sin, positions, d_rot};
}

struct RopeCase {
  std::size_t rows, heads, head_dim, d_rot, pos0, pad;
  RopePairing pairing;
  float base;
};

void check_rope(const RopeCase& c, std::uint64_t seed) {
  const std::size_t ld = c.heads * c.head_dim + c.pad;
  EMHA_INFO("rows=" << c.rows << " heads=" << c.heads << " head_dim=" << c.head_dim << " d_rot=" << c.d_rot
                    << " pos0=" << c.pos0 << " pad=" << c.pad << " pairing=" << int(c.pairing));
  Status status;
  const RopeTable t = table(c.pos0 + c.rows + 3, c.d_rot, c.base, status);
  EMHA_CHECK(status == Status::ok);
  emha::test::fill_uniform(g_x, c.rows * ld, seed, -2.0f, 2.0f);
  std::memcpy(g_y, g_x, c.rows * ld * sizeof(float));
  std::memcpy(g_y_ref, g_x, c.rows * ld * sizeof(float));
  EMHA_CHECK(emha::rope_f32(c.rows, c.heads, c.head_dim, c.pairing, c.pos0, t, g_y, ld) == Status::ok);
  EMHA_CHECK(emha::rope_f32_ref(c.rows, c.heads, c.head_dim, c.pairing, c.pos0, t, g_y_ref, ld) == Status::ok);
  emha::rope_f64(c.rows, c.heads, c.head_dim, c.d_rot, c.pairing, c.pos0, c.base, g_x, ld, g_y64);
  EMHA_CHECK(std::memcmp(g_y, g_y_ref, c.rows * ld * sizeof(float)) == 0);
  std::size_t bad = 0, pass_through_changed = 0, pad_changed = 0;
  for (std::size_t r = 0; r < c.rows; ++r) {
    for (std::size_t h = 0; h < c.heads; ++h) {
      const std::size_t o = r * ld + h * c.head_dim;
      for (std::size_t i = 0; i < c.d_rot / 2; ++i) {
        std::size_t ia, ib;
        emha::rope_pair(c.pairing, c.d_rot, i, ia, ib);
        const double tol = (std::fabs(g_x[o + ia]) + std::fabs(g_x[o + ib])) * 4 * u32 * double(c.pos0 + r + 2);
        const double* e = g_y64 + (r * c.heads + h) * c.head_dim;
        bad += !(std::fabs(g_y[o + ia] - e[ia]) <= tol) + !(std::fabs(g_y[o + ib] - e[ib]) <= tol);
      }
      for (std::size_t j = c.d_rot; j < c.head_dim; ++j) pass_through_changed += g_y[o + j] != g_x[o + j];
    }
    for (std::size_t j = c.heads * c.head_dim; j < ld; ++j) pad_changed += g_y[r * ld + j] != g_x[r * ld + j];
  }
  EMHA_CHECK(bad == 0);
  EMHA_CHECK(pass_through_changed == 0);
  EMHA_CHECK(pad_changed == 0);
}

}  // namespace

EMHA_TEST_CASE("rope_f32 over head sizes, rotary widths, positions and both pairings") {
  std::uint64_t seed = 1;
  for (RopePairing p : {RopePairing::half, RopePairing::interleaved})
    for (std::size_t d : emha::test::tail_sizes) {
      const std::size_t d_rot = d % 2 ? d + 1 : d;
      check_rope({3, 2, d_rot, d_rot, 0, 0, p, 10000.0f}, seed++);
      check_rope({3, 1, d_rot, d_rot, 5, 0, p, 10000.0f}, seed++);       // one head, rows back to back
      check_rope({2, 3, d_rot + 6, d_rot, 5, 3, p, 500000.0f}, seed++);  // partial, offset, stride
    }
  if constexpr (!emha::test::on_firmware) {
    check_rope({2, 2, 128, 128, 4090, 0, RopePairing::half, 10000.0f}, seed++);
    check_rope({2, 2, 128, 64, 2000, 1, RopePairing::interleaved, 10000.0f}, seed++);
  }
}

// xPos: its one implementation (scalar everywhere) keeps a unit pair's length within its factor's
// bounds (zeta^(c/512) for |c| <= 5: 0.98 .. 1.02) over every tail width.
EMHA_TEST_CASE("xpos_f32 scales each pair by its factor only") {
  constexpr std::size_t rows = 3;
  std::uint64_t seed = 1;
  for (std::size_t n : emha::test::tail_sizes) {
    const std::size_t d_rot = n % 2 ? n + 1 : n;
    Status status;
    const RopeTable t = table(9, d_rot, 10000.0f, status);
    emha::test::fill_uniform(g_x, rows * d_rot, seed++, -3.0f, 5.0f);
    std::memcpy(g_y, g_x, rows * d_rot * sizeof(float));
    const bool ok = status == Status::ok &&
                    emha::xpos_f32(rows, 1, d_rot, 9, false, 512.0f, t, g_y, d_rot) == Status::ok;
    std::size_t unbounded = 0;
    for (std::size_t i = 0; i + 1 < rows * d_rot; i += 2) {
      const double before = std::hypot(double(g_x[i]), double(g_x[i + 1]));
      const double after = std::hypot(double(g_y[i]), double(g_y[i + 1]));
      unbounded += !(after <= before * 1.02 + 1e-6 && after >= before * 0.98 - 1e-6);
    }
    EMHA_INFO("d_rot=" << d_rot);
    EMHA_CHECK(ok);
    EMHA_CHECK(unbounded == 0);
  }
}

EMHA_TEST_CASE("rope_f32 and rope_table_f32 refuse bad input and leave x untouched") {
  Status status;
  const RopeTable t = table(8, 8, 10000.0f, status);
  EMHA_CHECK(status == Status::ok);
  float* x = g_x;
  emha::test::fill_uniform(x, 4 * 16, 3);
  std::memcpy(g_y_ref, x, 4 * 16 * sizeof(float));
  // d_rot odd, zero, or wider than a head
  RopeTable odd = t;
  odd.d_rot = 7;
  EMHA_CHECK(emha::rope_f32(4, 2, 8, RopePairing::half, 0, odd, x, 16) == Status::invalid_argument);
  RopeTable zero = t;
  zero.d_rot = 0;
  EMHA_CHECK(emha::rope_f32(4, 2, 8, RopePairing::half, 0, zero, x, 16) == Status::invalid_argument);
  EMHA_CHECK(emha::rope_f32(4, 4, 4, RopePairing::half, 0, t, x, 16) == Status::invalid_argument);
  // positions past the table
  EMHA_CHECK(emha::rope_f32(4, 2, 8, RopePairing::half, 5, t, x, 16) == Status::too_long);
  EMHA_CHECK(emha::rope_f32(4, 2, 8, RopePairing::interleaved, SIZE_MAX, t, x, 16) == Status::too_long);
  // a row stride shorter than the heads, null pointers
  EMHA_CHECK(emha::rope_f32(4, 2, 8, RopePairing::half, 0, t, x, 15) == Status::invalid_argument);
  EMHA_CHECK(emha::rope_f32(4, 2, 8, RopePairing::half, 0, t, nullptr, 16) == Status::null_pointer);
  RopeTable no_sin = t;
  no_sin.sin = nullptr;
  EMHA_CHECK(emha::rope_f32(4, 2, 8, RopePairing::half, 0, no_sin, x, 16) == Status::null_pointer);
  EMHA_CHECK(std::memcmp(x, g_y_ref, 4 * 16 * sizeof(float)) == 0);
  // the table
  float c[4], s[4];
  EMHA_CHECK(emha::rope_table_f32(2, 3, 10000.0f, c, s) == Status::invalid_argument);
  EMHA_CHECK(emha::rope_table_f32(2, 0, 10000.0f, c, s) == Status::invalid_argument);
  EMHA_CHECK(emha::rope_table_f32(2, 4, 0.0f, c, s) == Status::invalid_argument);
  EMHA_CHECK(emha::rope_table_f32(2, 4, 10000.0f, c, nullptr) == Status::null_pointer);
  EMHA_CHECK(emha::rope_table_f32(2, 4, 10000.0f, c, s) == Status::ok);
  EMHA_CHECK(c[0] == 1.0f);  // position 0: no rotation
  EMHA_CHECK(s[1] == 0.0f);
}

EMHA_TEST_CASE("xpos_f32 refuses bad input and leaves x untouched") {
  Status status;
  const RopeTable t = table(8, 8, 10000.0f, status);
  EMHA_CHECK(status == Status::ok);
  float* x = g_x;
  emha::test::fill_uniform(x, 4 * 16, 4);
  std::memcpy(g_y_ref, x, 4 * 16 * sizeof(float));
  EMHA_CHECK(emha::xpos_f32(4, 2, 6, 8, false, 512.0f, t, x, 16) == Status::invalid_argument);  // d_rot != head_dim
  EMHA_CHECK(emha::xpos_f32(4, 2, 8, 8, false, 0.0f, t, x, 16) == Status::invalid_argument);    // scale_base
  EMHA_CHECK(emha::xpos_f32(4, 2, 8, 3, false, 512.0f, t, x, 16) == Status::too_long);  // rows > n_total
  EMHA_CHECK(emha::xpos_f32(4, 2, 8, 9, true, 512.0f, t, x, 16) == Status::too_long);   // past the table
  EMHA_CHECK(emha::xpos_f32(4, 2, 8, 8, true, 512.0f, t, x, 15) == Status::invalid_argument);
  EMHA_CHECK(emha::xpos_f32(4, 2, 8, 8, true, 512.0f, t, nullptr, 16) == Status::null_pointer);
  EMHA_CHECK(std::memcmp(x, g_y_ref, 4 * 16 * sizeof(float)) == 0);
}

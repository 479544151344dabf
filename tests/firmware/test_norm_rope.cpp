// SPDX-License-Identifier: Apache-2.0
// layer_norm_f32, rms_norm_f32 and rope_f32 on the device: norms against their float64
// reference within the float32 bound of tests/kernels/test_norm.cpp (a looser one: max over the
// row), RoPE bit for bit against its scalar reference, over tail lengths; xPos; and the tables
// filled once (ALiBi slopes, the sinusoidal encoding) against closed forms, with the device's libm.

#include <cmath>
#include <cstddef>
#include <cstring>

#include "emha/kernels/mask.hpp"
#include "emha/kernels/norm.hpp"
#include "emha/kernels/norm_ref.hpp"
#include "emha/kernels/rope.hpp"
#include "emha/kernels/rope_ref.hpp"
#include "emha/kernels/sinusoidal.hpp"
#include "runner.hpp"
#include "support/numeric.hpp"

namespace fw {
namespace {

constexpr std::size_t sizes[] = {1, 2, 3, 5, 7, 8, 9, 11, 13, 15, 16, 17, 31, 33, 37, 64, 127};
constexpr std::size_t rows = 3, max_n = 127 + 1;

float g_x[rows * max_n], g_y[rows * max_n], g_y_ref[rows * max_n], g_gamma[max_n], g_beta[max_n];
float g_cos[emha::rope_table_floats(9, 128)], g_sin[emha::rope_table_floats(9, 128)];
float g_slopes[12], g_pe[5 * 8];

// max |y - y64| <= (n + 10) u * 8 (|y64| + 8): inputs in [-3, 5), gamma in [0.5, 1.5), so |z|
// <= sqrt(n) and mean|x| rstd <= 8 here; a wrong kernel is off by O(1).
bool within_bound(std::size_t n, std::size_t ld, const float* y, const float* y64) {
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      const double e = y64[i * ld + j];
      const double tol = double(n + 10) * emha::test::u32 * 8 * (std::fabs(e) + 8);
      if (!(std::fabs(double(y[i * ld + j]) - e) <= tol)) return false;
    }
  return true;
}

// |x - expect| within 2 float ulps of expect
bool close(float x, double expect) { return std::fabs(double(x) - expect) <= std::fabs(expect) * 2.4e-7; }

void test_tables() {
  // ALiBi, 12 heads: the 8 slopes of 8 (2^-1 .. 2^-8, exact), then slopes 0, 2, 4, 6 of 16
  // (2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5).
  bool slopes_ok = emha::alibi_slopes(12, g_slopes) == emha::Status::ok;
  for (int k = 0; k < 8; ++k) slopes_ok = slopes_ok && g_slopes[k] == std::ldexp(1.0f, -(k + 1));
  for (int k = 0; k < 4; ++k) slopes_ok = slopes_ok && close(g_slopes[8 + k], std::pow(2.0, -0.5 - k));
  check(slopes_ok, "alibi_slopes(12): 2^-1 .. 2^-8, then 2^-0.5 .. 2^-3.5");
  // Sinusoidal, 5 positions x 8: pe[p][2i] = sin(p / 10000^(2i/8)), pe[p][2i+1] = cos(...).
  bool pe_ok = emha::sinusoidal_table_f32(5, 8, g_pe) == emha::Status::ok;
  for (int p = 0; p < 5; ++p)
    for (int i = 0; i < 4; ++i) {
      const double angle = p / std::pow(10000.0, 2.0 * i / 8.0);
      pe_ok = pe_ok && close(g_pe[p * 8 + 2 * i], std::sin(angle)) && close(g_pe[p * 8 + 2 * i + 1], std::cos(angle));
    }
  check(pe_ok, "sinusoidal_table_f32 within 2 ulps of sin and cos");
}

}  // namespace

void test_norm_rope() {
  Suite suite("norm, rope");
  test_tables();
  std::uint64_t seed = 1;
  for (std::size_t n : sizes) {
    const std::size_t ld = n + 1;
    emha::test::fill_uniform(g_x, rows * ld, seed++, -3.0f, 5.0f);
    emha::test::fill_uniform(g_gamma, n, seed++, 0.5f, 1.5f);
    emha::test::fill_uniform(g_beta, n, seed++);
    emha::layer_norm_f32(rows, n, g_x, ld, g_y, ld, g_gamma, g_beta, 1e-5f);
    emha::layer_norm_f32_ref<double>(rows, n, g_x, ld, g_y_ref, ld, g_gamma, g_beta, 1e-5f);
    if (!check(within_bound(n, ld, g_y, g_y_ref), "layer_norm_f32 within the bound")) Line() << "  n=" << static_cast<unsigned>(n);
    emha::rms_norm_f32(rows, n, g_x, ld, g_y, ld, g_gamma, 1e-5f);
    emha::rms_norm_f32_ref<double>(rows, n, g_x, ld, g_y_ref, ld, g_gamma, 1e-5f);
    if (!check(within_bound(n, ld, g_y, g_y_ref), "rms_norm_f32 within the bound")) Line() << "  n=" << static_cast<unsigned>(n);

    const std::size_t d_rot = n % 2 ? n + 1 : n;
    check(emha::rope_table_f32(9, d_rot, 10000.0f, g_cos, g_sin) == emha::Status::ok, "rope_table_f32");
    const emha::RopeTable table{g_cos, g_sin, 9, d_rot};
    for (emha::RopePairing p : {emha::RopePairing::half, emha::RopePairing::interleaved}) {
      std::memcpy(g_y, g_x, rows * ld * sizeof(float));
      std::memcpy(g_y_ref, g_x, rows * ld * sizeof(float));
      const bool ok = emha::rope_f32(rows, 1, d_rot, p, 5, table, g_y, d_rot) == emha::Status::ok &&
                      emha::rope_f32_ref(rows, 1, d_rot, p, 5, table, g_y_ref, d_rot) == emha::Status::ok;
      if (!check(ok && std::memcmp(g_y, g_y_ref, rows * d_rot * sizeof(float)) == 0,
                 "rope_f32 bit for bit as rope_f32_ref"))
        Line() << "  d_rot=" << static_cast<unsigned>(d_rot);
    }
    // xPos: its one implementation (scalar everywhere) runs and keeps a unit pair's length within
    // its factor's bounds (zeta^(c/512) for |c| <= 5: 0.98 .. 1.02).
    std::memcpy(g_y, g_x, rows * ld * sizeof(float));
    const bool xpos_ok = emha::xpos_f32(rows, 1, d_rot, 9, false, 512.0f, table, g_y, d_rot) == emha::Status::ok;
    bool bounded = true;
    for (std::size_t i = 0; i + 1 < rows * d_rot; i += 2) {
      const double before = std::hypot(double(g_x[i]), double(g_x[i + 1]));
      const double after = std::hypot(double(g_y[i]), double(g_y[i + 1]));
      bounded = bounded && after <= before * 1.02 + 1e-6 && after >= before * 0.98 - 1e-6;
    }
    check(xpos_ok && bounded, "xpos_f32 runs and scales each pair by its factor only");
  }
}

}  // namespace fw

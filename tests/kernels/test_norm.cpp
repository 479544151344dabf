// SPDX-License-Identifier: Apache-2.0
// layer_norm_f32 and rms_norm_f32 against their scalar references and float64 math, on the host
// and the firmware: every tail length, affine on and off, padded rows, in place; a NaN or inf
// poisons its row only. Static buffers (the host adds rows of 1000 and 4099). PyTorch parity is
// test_norm_host.cpp's.
//
// Bound (float32 arithmetic, u = 2^-24): the row sums of n terms carry <= n u of the sum of
// magnitudes, so the mean is off by <= n u mean|x| and the variance by <= (n + 4) u of its size;
// the normalized z = (x - mean) rstd by <= (n + 8) u (|z| + mean|x| rstd + 1); y = z g + b adds
// 2u. Per element, with z64, rstd64 from float64 math:
//   |y - y64| <= (n + 10) u ((|z64| + mean|x| rstd64 + 1) |g| + |b|).
// A wrong kernel (a dropped beta, a wrong mean, a missed tail) is off by O(1), far outside it.
// Against layer_norm_f32_ref<double> / rms_norm_f32_ref<double> a looser bound holds as well:
// inputs in [-3, 5), gamma in [0.5, 1.5), so |z| <= sqrt(n) and mean|x| rstd <= 8 here, and
//   |y - y64| <= (n + 10) u * 8 (|y64| + 8).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "emha/kernels/norm.hpp"
#include "emha/kernels/norm_ref.hpp"
#include "support/numeric.hpp"
#include "support/unit.hpp"

namespace {

using emha::test::u32;

struct NormCase {
  bool rms;
  std::size_t rows, n, pad;
  bool gamma, beta;
};

// Rows of up to 127 (+ 5 padding) on both targets; the host adds 2 rows of 4099.
constexpr std::size_t max_floats = emha::test::on_firmware ? 3 * (127 + 5) : 2 * 4099;
constexpr std::size_t max_n = emha::test::on_firmware ? 127 : 4099;

float g_x[max_floats], g_y[max_floats], g_y_ref[max_floats], g_y64[max_floats], g_in_place[max_floats];
float g_gamma[max_n], g_beta[max_n];

// Violations of the first bound above, for y (float32 results) against float64 math.
std::size_t bound_violations(const NormCase& c, const float* g, const float* b, const float* y) {
  const std::size_t ld = c.n + c.pad;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < c.rows; ++i) {
    const float* xr = g_x + i * ld;
    double mean = 0, abs_mean = 0;
    for (std::size_t j = 0; j < c.n; ++j) {
      mean += xr[j];
      abs_mean += std::fabs(xr[j]);
    }
    mean = c.rms ? 0.0 : mean / double(c.n);
    abs_mean /= double(c.n);
    double sq = 0;
    for (std::size_t j = 0; j < c.n; ++j) sq += (xr[j] - mean) * (xr[j] - mean);
    const double rstd = 1.0 / std::sqrt(sq / double(c.n) + 1e-5);
    for (std::size_t j = 0; j < c.n; ++j) {
      const double z = (xr[j] - mean) * rstd;
      const double gj = g ? g[j] : 1.0, bj = b ? b[j] : 0.0;
      const double y64 = z * gj + bj;
      const double tol =
          double(c.n + 10) * u32 * ((std::fabs(z) + abs_mean * rstd + 1) * std::fabs(gj) + std::fabs(bj));
      if (!(std::fabs(y[i * ld + j] - y64) <= tol)) ++bad;
    }
  }
  return bad;
}

// Violations of the second bound, y against the library's float64 reference y64.
std::size_t ref_bound_violations(const NormCase& c, const float* y, const float* y64) {
  const std::size_t ld = c.n + c.pad;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < c.rows; ++i)
    for (std::size_t j = 0; j < c.n; ++j) {
      const double e = y64[i * ld + j];
      const double tol = double(c.n + 10) * u32 * 8 * (std::fabs(e) + 8);
      bad += !(std::fabs(double(y[i * ld + j]) - e) <= tol);
    }
  return bad;
}

void check_norm(const NormCase& c, std::uint64_t seed) {
  const std::size_t ld = c.n + c.pad, count = c.rows * ld;
  emha::test::fill_uniform(g_x, count, seed, -3.0f, 5.0f);
  emha::test::fill_uniform(g_gamma, c.n, seed + 1, 0.5f, 1.5f);
  emha::test::fill_uniform(g_beta, c.n, seed + 2, -1.0f, 1.0f);
  const float* g = c.gamma ? g_gamma : nullptr;
  const float* b = c.beta && !c.rms ? g_beta : nullptr;  // RMSNorm has no bias
  for (std::size_t i = 0; i < count; ++i) {
    g_y[i] = g_y_ref[i] = g_y64[i] = 7.0f;
    g_in_place[i] = g_x[i];
  }
  if (c.rms) {
    emha::rms_norm_f32(c.rows, c.n, g_x, ld, g_y, ld, g, 1e-5f);
    emha::rms_norm_f32_ref(c.rows, c.n, g_x, ld, g_y_ref, ld, g, 1e-5f);
    emha::rms_norm_f32_ref<double>(c.rows, c.n, g_x, ld, g_y64, ld, g, 1e-5f);
    emha::rms_norm_f32(c.rows, c.n, g_in_place, ld, g_in_place, ld, g, 1e-5f);
  } else {
    emha::layer_norm_f32(c.rows, c.n, g_x, ld, g_y, ld, g, b, 1e-5f);
    emha::layer_norm_f32_ref(c.rows, c.n, g_x, ld, g_y_ref, ld, g, b, 1e-5f);
    emha::layer_norm_f32_ref<double>(c.rows, c.n, g_x, ld, g_y64, ld, g, b, 1e-5f);
    emha::layer_norm_f32(c.rows, c.n, g_in_place, ld, g_in_place, ld, g, b, 1e-5f);
  }
  EMHA_INFO((c.rms ? "rms_norm" : "layer_norm") << " rows=" << c.rows << " n=" << c.n << " pad=" << c.pad
                                                << " gamma=" << int(c.gamma) << " beta=" << int(c.beta));
  EMHA_CHECK(bound_violations(c, g, b, g_y) == 0);
  EMHA_CHECK(bound_violations(c, g, b, g_y_ref) == 0);
  EMHA_CHECK(ref_bound_violations(c, g_y, g_y64) == 0);
  std::size_t pad_written = 0, in_place_differs = 0;
  for (std::size_t i = 0; i < c.rows; ++i) {
    for (std::size_t j = c.n; j < ld; ++j) pad_written += g_y[i * ld + j] != 7.0f;
    for (std::size_t j = 0; j < c.n; ++j) in_place_differs += g_in_place[i * ld + j] != g_y[i * ld + j];
  }
  EMHA_CHECK(pad_written == 0);       // the stride's gap is not written
  EMHA_CHECK(in_place_differs == 0);  // x == y gives the same bits
}

}  // namespace

EMHA_TEST_CASE("layer_norm_f32 and rms_norm_f32 over every tail length, affine on and off") {
  std::uint64_t seed = 1;
  for (bool rms : {false, true})
    for (std::size_t n : emha::test::tail_sizes) {
      check_norm({rms, 3, n, 0, true, true}, seed += 3);
      check_norm({rms, 3, n, 1, true, true}, seed += 3);
      check_norm({rms, 2, n, 5, false, false}, seed += 3);
      check_norm({rms, 2, n, 1, true, false}, seed += 3);
      check_norm({rms, 2, n, 2, false, true}, seed += 3);
    }
  if constexpr (!emha::test::on_firmware) {
    check_norm({false, 2, 1000, 3, true, true}, seed += 3);
    check_norm({true, 2, 4099, 0, true, false}, seed += 3);
  }
}

EMHA_TEST_CASE("layer_norm_f32 and rms_norm_f32: a NaN or inf poisons its row only; empty shapes write nothing") {
  constexpr std::size_t n = 19;
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    emha::test::fill_uniform(g_x, 2 * n, 9);
    g_x[n + 4] = bad;  // row 1
    emha::layer_norm_f32(2, n, g_x, n, g_y, n, nullptr, nullptr, 1e-5f);
    emha::rms_norm_f32(2, n, g_x, n, g_y_ref, n, nullptr, 1e-5f);
    std::size_t row0_finite = 0, row1_nan = 0, rms_row1_nan_or_zero = 0;
    for (std::size_t j = 0; j < n; ++j) {
      row0_finite += std::isfinite(g_y[j]) && std::isfinite(g_y_ref[j]);
      row1_nan += std::isnan(g_y[n + j]);
      rms_row1_nan_or_zero += std::isnan(g_y_ref[n + j]) || (j != 4 && g_y_ref[n + j] == 0.0f);
    }
    EMHA_CHECK(row0_finite == n);
    EMHA_CHECK(row1_nan == n);
    EMHA_CHECK(rms_row1_nan_or_zero == n);  // x / inf is 0 for finite x; the bad element is NaN
  }
  float untouched = 3.0f;
  emha::layer_norm_f32(0, 4, &untouched, 4, &untouched, 4, nullptr, nullptr, 1e-5f);
  emha::rms_norm_f32(4, 0, &untouched, 0, &untouched, 0, nullptr, 1e-5f);
  EMHA_CHECK(untouched == 3.0f);
}

// SPDX-License-Identifier: Apache-2.0
// layer_norm_f32 and rms_norm_f32 against their scalar references, float64 math and PyTorch
// (tests/kernels/fixtures/kernels.hpp: torch.nn.LayerNorm and Hugging Face's LlamaRMSNorm).
//
// Bound (float32 arithmetic, u = 2^-24): the row sums of n terms carry <= n u of the sum of
// magnitudes, so the mean is off by <= n u mean|x| and the variance by <= (n + 4) u of its size;
// the normalized z = (x - mean) rstd by <= (n + 8) u (|z| + mean|x| rstd + 1); y = z g + b adds
// 2u. Per element, with z64, rstd64 from float64 math:
//   |y - y64| <= (n + 10) u ((|z64| + mean|x| rstd64 + 1) |g| + |b|).
// A wrong kernel (a dropped beta, a wrong mean, a missed tail) is off by O(1), far outside it.

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "emha/kernels/norm.hpp"
#include "emha/kernels/norm_ref.hpp"
#include "fixtures/kernels.hpp"
#include "support/numeric.hpp"
#include "support/parity_errors.hpp"

namespace {

using emha::test::u32;

struct NormCase {
  bool rms;
  std::size_t rows, n, pad;
  bool gamma, beta;
};

// Violations of the bound above, for y (float32 results) against float64 math.
std::size_t bound_violations(const NormCase& c, const std::vector<float>& x, const float* g,
                             const float* b, const std::vector<float>& y) {
  const std::size_t ld = c.n + c.pad;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < c.rows; ++i) {
    const float* xr = x.data() + i * ld;
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

void check_norm(const NormCase& c, std::uint64_t seed) {
  const std::size_t ld = c.n + c.pad;
  const auto x = emha::test::uniform(c.rows * ld, seed, -3.0f, 5.0f);
  const auto gv = emha::test::uniform(c.n, seed + 1, 0.5f, 1.5f);
  const auto bv = emha::test::uniform(c.n, seed + 2, -1.0f, 1.0f);
  const float* g = c.gamma ? gv.data() : nullptr;
  const float* b = c.beta && !c.rms ? bv.data() : nullptr;  // RMSNorm has no bias
  std::vector<float> y(c.rows * ld, 7.0f), y_ref(c.rows * ld, 7.0f), in_place = x;
  if (c.rms) {
    emha::rms_norm_f32(c.rows, c.n, x.data(), ld, y.data(), ld, g, 1e-5f);
    emha::rms_norm_f32_ref(c.rows, c.n, x.data(), ld, y_ref.data(), ld, g, 1e-5f);
    emha::rms_norm_f32(c.rows, c.n, in_place.data(), ld, in_place.data(), ld, g, 1e-5f);
  } else {
    emha::layer_norm_f32(c.rows, c.n, x.data(), ld, y.data(), ld, g, b, 1e-5f);
    emha::layer_norm_f32_ref(c.rows, c.n, x.data(), ld, y_ref.data(), ld, g, b, 1e-5f);
    emha::layer_norm_f32(c.rows, c.n, in_place.data(), ld, in_place.data(), ld, g, b, 1e-5f);
  }
  INFO(std::string(c.rms ? "rms_norm" : "layer_norm") << " rows=" << c.rows << " n=" << c.n << " pad=" << c.pad
                                           << " gamma=" << c.gamma << " beta=" << c.beta);
  CHECK(bound_violations(c, x, g, b, y) == 0);
  CHECK(bound_violations(c, x, g, b, y_ref) == 0);
  std::size_t pad_written = 0, in_place_differs = 0;
  for (std::size_t i = 0; i < c.rows; ++i) {
    for (std::size_t j = c.n; j < ld; ++j) pad_written += y[i * ld + j] != 7.0f;
    for (std::size_t j = 0; j < c.n; ++j) in_place_differs += in_place[i * ld + j] != y[i * ld + j];
  }
  CHECK(pad_written == 0);       // the stride's gap is not written
  CHECK(in_place_differs == 0);  // x == y gives the same bits
}

// emha's error against the float64 truth within 2x PyTorch float32's own (issue #16's parity
// criterion) plus one float32 ulp of the largest output (torch may be exact on a tiny case).
template <class F>
void check_against_torch(const char* kernel, const float* y) {
  const emha::test::ParityErrors e = emha::test::parity_errors<F>(y, F::rows * F::n);
  MESSAGE(std::string(kernel) << " vs torch, n = " << F::n << ": max error against float64, emha " << e.mine
                 << ", torch float32 " << e.theirs);
  CHECK(e.mine <= 2 * e.theirs + e.top * 2 * u32);
}

}  // namespace

TEST_CASE("layer_norm_f32 and rms_norm_f32 over every tail length, affine on and off") {
  std::uint64_t seed = 1;
  for (bool rms : {false, true})
    for (std::size_t n : emha::test::tail_sizes) {
      check_norm({rms, 3, n, 0, true, true}, seed += 3);
      check_norm({rms, 2, n, 5, false, false}, seed += 3);
      check_norm({rms, 2, n, 1, true, false}, seed += 3);
      check_norm({rms, 2, n, 2, false, true}, seed += 3);
    }
  check_norm({false, 2, 1000, 3, true, true}, seed += 3);
  check_norm({true, 2, 4099, 0, true, false}, seed += 3);
}

TEST_CASE("layer_norm_f32 and rms_norm_f32: a NaN or inf poisons its row only; empty shapes write nothing") {
  constexpr std::size_t n = 19;
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    auto x = emha::test::uniform(2 * n, 9);
    x[n + 4] = bad;  // row 1
    std::vector<float> y(2 * n), z(2 * n);
    emha::layer_norm_f32(2, n, x.data(), n, y.data(), n, nullptr, nullptr, 1e-5f);
    emha::rms_norm_f32(2, n, x.data(), n, z.data(), n, nullptr, 1e-5f);
    std::size_t row0_finite = 0, row1_nan = 0, rms_row1_nan_or_zero = 0;
    for (std::size_t j = 0; j < n; ++j) {
      row0_finite += std::isfinite(y[j]) && std::isfinite(z[j]);
      row1_nan += std::isnan(y[n + j]);
      rms_row1_nan_or_zero += std::isnan(z[n + j]) || (j != 4 && z[n + j] == 0.0f);
    }
    CHECK(row0_finite == n);
    CHECK(row1_nan == n);
    CHECK(rms_row1_nan_or_zero == n);  // x / inf is 0 for finite x; the bad element is NaN
  }
  float untouched = 3.0f;
  emha::layer_norm_f32(0, 4, &untouched, 4, &untouched, 4, nullptr, nullptr, 1e-5f);
  emha::rms_norm_f32(4, 0, &untouched, 0, &untouched, 0, nullptr, 1e-5f);
  CHECK(untouched == 3.0f);
}

TEST_CASE_TEMPLATE_DEFINE("layer_norm_f32 matches torch.nn.LayerNorm", F, layer_norm_parity) {
  std::vector<float> y(F::rows * F::n);
  emha::layer_norm_f32(F::rows, F::n, F::x, F::n, y.data(), F::n, F::gamma, F::beta, F::eps);
  check_against_torch<F>("layer_norm_f32", y.data());
}
TEST_CASE_TEMPLATE_APPLY(layer_norm_parity, emha::kernel_fixtures::layer_norms);

TEST_CASE_TEMPLATE_DEFINE("rms_norm_f32 matches Hugging Face's LlamaRMSNorm", F, rms_norm_parity) {
  std::vector<float> y(F::rows * F::n);
  emha::rms_norm_f32(F::rows, F::n, F::x, F::n, y.data(), F::n, F::gamma, F::eps);
  check_against_torch<F>("rms_norm_f32", y.data());
}
TEST_CASE_TEMPLATE_APPLY(rms_norm_parity, emha::kernel_fixtures::rms_norms);

// SPDX-License-Identifier: Apache-2.0
// layer_norm_f32 and rms_norm_f32 against PyTorch on the host (tests/kernels/fixtures/kernels.hpp:
// torch.nn.LayerNorm and Hugging Face's LlamaRMSNorm), with doctest's template test cases. The
// sweeps against the references and float64 math are test_norm.cpp's.

#include <doctest/doctest.h>

#include <cmath>
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

// emha's error against the float64 truth within 2x PyTorch float32's own (the parity
// criterion) plus one float32 ulp of the largest output (torch may be exact on a tiny case).
template <class F>
void check_against_torch(const char* kernel, const float* y) {
  const emha::test::ParityErrors e = emha::test::parity_errors<F>(y, F::rows * F::n);
  MESSAGE(std::string(kernel) << " vs torch, n = " << F::n << ": max error against float64, emha " << e.mine
                 << ", torch float32 " << e.theirs);
  CHECK(e.mine <= 2 * e.theirs + e.top * 2 * u32);
}

}  // namespace

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

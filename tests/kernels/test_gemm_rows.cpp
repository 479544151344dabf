// SPDX-License-Identifier: Apache-2.0
// The few-row products a decode step runs with B read in place, on the host and the firmware:
// gemm_f32_rows (float B) and gemm_w8a32_rows (int8 B in [-127, 127] with a scale per row of B:
// an int8 KvCache), against float64 and their references over every tail of m (1..5), n and k,
// both B layouts, a row stride on every operand, alpha, beta and bias. Each row alone gives the
// rows' bits (a GQA group's rows may be split over threads). The bound is gemm_check.hpp's
// rows_out_of_bound: (k + 3) u times sum |a s b| (+ |bias| + |beta c|).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "emha/kernels/gemm.hpp"
#include "emha/kernels/gemm_ref.hpp"
#include "emha/kernels/gemm_w8a32.hpp"
#include "emha/kernels/gemm_w8a32_ref.hpp"
#include "kernels/gemm_check.hpp"
#include "support/numeric.hpp"
#include "support/unit.hpp"

namespace {

using emha::GemmOptions;
using emha::Trans;

// Every tail size; the host adds a head_dim past all of them. The firmware stops at 33 (time
// under qemu-system).
#ifdef EMHA_TEST_FIRMWARE
constexpr std::size_t sizes[] = {1, 2, 3, 5, 7, 8, 9, 11, 13, 16, 17, 31, 33};
#else
constexpr std::size_t sizes[] = {1, 2, 3, 5, 7, 8, 9, 11, 13, 15, 16, 17, 31, 33, 37, 64, 127, 200};
#endif
constexpr std::size_t largest = sizes[sizeof sizes / sizeof sizes[0] - 1];
constexpr std::size_t max_m = 5, pad = 3, ld = largest + pad;

float g_a[max_m * ld], g_b[ld * ld], g_scale[ld], g_bias[ld];
std::int8_t g_b8[ld * ld];
float g_c0[max_m * ld], g_c[max_m * ld], g_c_ref[max_m * ld], g_c64[max_m * ld], g_mag[max_m * ld],
    g_one[max_m * ld];

// B's values: float uniform in [-1, 1); int8 over [-127, 127] with both ends present and scales as
// an int8 cache's (amax / 127 of rows of magnitude ~1).
void fill_b(float* b, std::size_t count, std::uint64_t seed) { emha::test::fill_uniform(b, count, seed); }
void fill_b(std::int8_t* b, std::size_t count, std::uint64_t seed) { emha::test::fill_int8(b, count, seed); }

// C = alpha A B (+ bias) + beta C with the kernel under test, its reference in float and in float64.
enum class Run { kernel, ref, ref64 };
void product(Run r, std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda, const float* b,
             std::size_t ldb, Trans tr, float* c, std::size_t ldc, const GemmOptions& o) {
  if (r == Run::kernel) emha::gemm_f32_rows(m, n, k, a, lda, b, ldb, tr, c, ldc, o);
  if (r == Run::ref) emha::gemm_f32_rows_ref(m, n, k, a, lda, b, ldb, tr, c, ldc, o);
  if (r == Run::ref64) emha::gemm_f32_rows_ref<double>(m, n, k, a, lda, b, ldb, tr, c, ldc, o);
}
void product(Run r, std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda,
             const std::int8_t* b, std::size_t ldb, Trans tr, float* c, std::size_t ldc, const GemmOptions& o) {
  if (r == Run::kernel) emha::gemm_w8a32_rows(m, n, k, a, lda, b, ldb, g_scale, tr, c, ldc, o);
  if (r == Run::ref) emha::gemm_w8a32_rows_ref(m, n, k, a, lda, b, ldb, g_scale, tr, c, ldc, o);
  if (r == Run::ref64) emha::gemm_w8a32_rows_ref<double>(m, n, k, a, lda, b, ldb, g_scale, tr, c, ldc, o);
}

// m rows, n = k = s but for variant 1 (n = 9) and 2 (k = 11); 1 and 2 with alpha and beta, 3
// also with a bias (with k a multiple of the lanes where s is).
template <class B>
void check_rows(B* b, std::size_t m, std::size_t s, Trans tr, int variant, std::uint64_t seed) {
  constexpr bool int8 = std::is_same_v<B, std::int8_t>;
  const GemmOptions plain{}, scaled{0.37f, 1.0f, nullptr};
  const std::size_t n = variant == 1 ? 9 : s, k = variant == 2 ? 11 : s;
  const std::size_t lda = k + pad, ldc = n + pad, ldb = (tr == Trans::none ? n : k) + pad;
  const std::size_t b_rows = tr == Trans::none ? k : n;
  emha::test::fill_uniform(g_a, m * lda, seed);
  fill_b(b, b_rows * ldb, seed + 1);
  emha::test::fill_uniform(g_scale, b_rows, seed + 2, 1.5f / 127.0f, 2.5f / 127.0f);
  if (!int8)  // float B has no scales: 1 in the magnitude's sum below
    for (std::size_t p = 0; p < b_rows; ++p) g_scale[p] = 1.0f;
  emha::test::fill_uniform(g_bias, n, seed + 3);
  emha::test::fill_uniform(g_c0, m * ldc, seed + 4);
  GemmOptions o = variant == 0 ? plain : scaled;
  if (variant >= 2) o.bias = g_bias;
  for (std::size_t i = 0; i < m * ldc; ++i) g_c[i] = g_c_ref[i] = g_c64[i] = g_one[i] = g_c0[i];
  product(Run::kernel, m, n, k, g_a, lda, b, ldb, tr, g_c, ldc, o);
  product(Run::ref, m, n, k, g_a, lda, b, ldb, tr, g_c_ref, ldc, o);
  product(Run::ref64, m, n, k, g_a, lda, b, ldb, tr, g_c64, ldc, o);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < ldc; ++j) {
      double sum = 0;  // float64 sum |a s b| over k, s the scale of B's row that b is on
      for (std::size_t p = 0; p < k; ++p) {
        const std::size_t row = tr == Trans::none ? p : j, at = tr == Trans::none ? p * ldb + j : j * ldb + p;
        if (j < n) sum += std::fabs(double(g_a[i * lda + p]) * double(g_scale[row]) * double(b[at]));
      }
      g_mag[i * ldc + j] = static_cast<float>(sum);
    }
  const std::size_t bad =
      emha::test::rows_out_of_bound(m, n, k, ldc, o, g_c, g_c_ref, g_c64, g_c0, g_mag);
  for (std::size_t i = 0; i < m; ++i) product(Run::kernel, 1, n, k, g_a + i * lda, lda, b, ldb, tr, g_one + i * ldc, ldc, o);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < m * ldc; ++i) differ += g_one[i] != g_c[i];
  EMHA_INFO((int8 ? "gemm_w8a32_rows" : "gemm_f32_rows") << " m=" << m << " n=" << n << " k=" << k
                                                         << " trans=" << int(tr) << " variant=" << variant);
  EMHA_CHECK(bad == 0);
  EMHA_CHECK(differ == 0);
}

template <class B>
void check_all(B* b, std::uint64_t seed) {
  for (std::size_t m = 1; m <= max_m; ++m)
    for (Trans tr : {Trans::none, Trans::transpose})
      for (int variant = 0; variant < 4; ++variant)
        for (std::size_t s : sizes) check_rows(b, m, s, tr, variant, seed += 5);
}

}  // namespace

EMHA_TEST_CASE("gemm_f32_rows: few rows, B in place, over every tail; each row alone the same bits") {
  check_all(g_b, 1400);
}

EMHA_TEST_CASE("gemm_w8a32_rows: few rows, int8 B in place with a scale per row, over every tail") {
  check_all(g_b8, 2600);
}

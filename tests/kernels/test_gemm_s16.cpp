// SPDX-License-Identifier: Apache-2.0
// gemm_s16x8 and gemm_s16 (emha/kernels/gemm_s16.hpp) on the host and the firmware: m 1-3, n 1-9
// (the four-row blocks of b and each count of leftover rows), k 0-40 and across gemm_s16x8's
// int32 chunks of 256 (255-257, 511-513, 700), padded strides. Each int64 sum against a sum of
// doubles written here (exact below 2^53) and against the reference; operands at the int16 and
// int8 ends throughout (two int16 products overflow int32; 256 int16 x int8 ones nearly do), and
// nothing written past n.

#include <cstddef>
#include <cstdint>

#include "emha/kernels/gemm_s16.hpp"
#include "emha/kernels/gemm_s16_ref.hpp"
#include "support/unit.hpp"

namespace {

constexpr std::size_t max_m = 3, max_n = 9, max_k = 700, pad = 3, lda = max_k + pad, ldc = max_n + pad;
std::int16_t g_a[max_m * lda], g_b16[max_n * lda];
std::int8_t g_b8[max_n * lda];
std::int64_t g_c[max_m * ldc], g_c_ref[max_m * ldc];

// The ends (-32768 and -128: every product at its largest) or seeded values over the whole range.
void fill(std::size_t seed, bool extreme) {
  std::uint32_t s = std::uint32_t(seed) * 2654435761u + 1u;
  auto next = [&s] { return s = s * 1664525u + 1013904223u, s >> 16; };
  for (std::int16_t& v : g_a) v = extreme ? INT16_MIN : std::int16_t(next());
  for (std::int16_t& v : g_b16) v = extreme ? INT16_MIN : std::int16_t(next());
  for (std::int8_t& v : g_b8) v = extreme ? INT8_MIN : std::int8_t(next() % 255 - 127);
}

template <class B>
std::size_t check(std::size_t m, std::size_t n, std::size_t k, const B* b, std::size_t& bad_ref, std::size_t& written) {
  for (std::size_t i = 0; i < max_m * ldc; ++i) g_c[i] = g_c_ref[i] = -5;
  if constexpr (sizeof(B) == 1) {
    emha::gemm_s16x8(m, n, k, g_a, lda, b, lda, g_c, ldc);
    emha::gemm_s16x8_ref(m, n, k, g_a, lda, b, lda, g_c_ref, ldc);
  } else {
    emha::gemm_s16(m, n, k, g_a, lda, b, lda, g_c, ldc);
    emha::gemm_s16_ref(m, n, k, g_a, lda, b, lda, g_c_ref, ldc);
  }
  std::size_t bad = 0;
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      double want = 0;
      for (std::size_t p = 0; p < k; ++p) want += double(g_a[i * lda + p]) * double(b[j * lda + p]);
      bad += double(g_c[i * ldc + j]) != want;
      bad_ref += double(g_c_ref[i * ldc + j]) != want;
    }
    for (std::size_t j = n; j < ldc; ++j) written += g_c[i * ldc + j] != -5;
  }
  return bad;
}

}  // namespace

EMHA_TEST_CASE("gemm_s16x8 and gemm_s16 over every tail give exact int64 sums") {
  constexpr std::size_t long_k[] = {255, 256, 257, 511, 512, 513, 700};
  std::size_t bad8 = 0, bad16 = 0, bad_ref = 0, written = 0, cases = 0;
  for (int extreme = 0; extreme < 2; ++extreme)
    for (std::size_t m = 1; m <= max_m; ++m)
      for (std::size_t n = 1; n <= max_n; ++n)
        for (std::size_t t = 0; t < 41 + sizeof long_k / sizeof long_k[0]; ++t) {
          const std::size_t k = t < 41 ? t : long_k[t - 41];
          fill(31 * k + 7 * m + n, extreme);
          bad8 += check(m, n, k, g_b8, bad_ref, written);
          bad16 += check(m, n, k, g_b16, bad_ref, written);
          ++cases;
        }
  EMHA_CHECK(cases > 1000);
  EMHA_CHECK(bad8 == 0);
  EMHA_CHECK(bad16 == 0);
  EMHA_CHECK(bad_ref == 0);
  EMHA_CHECK(written == 0);
}

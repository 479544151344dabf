// SPDX-License-Identifier: Apache-2.0
// gemm_s16x8 and gemm_s16 (emha/kernels/gemm_s16.hpp): one row of a against four rows of b at a
// time, the loads of a shared by the four sums, n's tail the same loop with fewer rows. Portable
// C++ that each variant's compiler vectorizes over k:
//   gemm_s16x8  an int16 x int8 product is below 2^22 in magnitude, so int32 sums of 256 of them
//               are exact; each chunk's int32 sums are added to the int64 totals;
//   gemm_s16    an int16 x int16 product reaches 2^30, two of them overflow int32: int64 sums.
// Integer sums: the reference's values on every variant.

#include "emha/kernels/gemm_s16.hpp"
#include "isa_kernels.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

namespace {

// Int32 may hold the sum of `Chunk` products of an A and a B (see the top of this file).
template <class B>
inline constexpr std::size_t chunk = sizeof(B) == 1 ? 256 : 1;

// c[j] = sum_p a[p] * b[j * ldb + p] for j < Cols.
template <std::size_t Cols, class B>
void row_block(std::size_t k, const std::int16_t* a, const B* b, std::size_t ldb, std::int64_t* c) noexcept {
  std::int64_t total[Cols] = {};
  if constexpr (chunk<B> > 1) {
    for (std::size_t p0 = 0; p0 < k; p0 += chunk<B>) {
      const std::size_t end = k - p0 < chunk<B> ? k : p0 + chunk<B>;
      std::int32_t s[Cols] = {};
      for (std::size_t p = p0; p < end; ++p)
        for (std::size_t j = 0; j < Cols; ++j) s[j] += std::int32_t(a[p]) * b[j * ldb + p];
      for (std::size_t j = 0; j < Cols; ++j) total[j] += s[j];
    }
  } else {
    for (std::size_t p = 0; p < k; ++p)
      for (std::size_t j = 0; j < Cols; ++j) total[j] += std::int64_t(a[p]) * b[j * ldb + p];
  }
  for (std::size_t j = 0; j < Cols; ++j) c[j] = total[j];
}

template <class B>
void gemm(std::size_t m, std::size_t n, std::size_t k, const std::int16_t* a, std::size_t lda, const B* b,
          std::size_t ldb, std::int64_t* c, std::size_t ldc) noexcept {
  for (std::size_t i = 0; i < m; ++i) {
    const std::int16_t* ai = a + i * lda;
    std::int64_t* ci = c + i * ldc;
    std::size_t j = 0;
    for (; j + 4 <= n; j += 4) row_block<4>(k, ai, b + j * ldb, ldb, ci + j);
    for (; j < n; ++j) row_block<1>(k, ai, b + j * ldb, ldb, ci + j);
  }
}

}  // namespace

void gemm_s16x8(std::size_t m, std::size_t n, std::size_t k, const std::int16_t* a, std::size_t lda,
                const std::int8_t* b, std::size_t ldb, std::int64_t* c, std::size_t ldc) noexcept {
  gemm(m, n, k, a, lda, b, ldb, c, ldc);
}

void gemm_s16(std::size_t m, std::size_t n, std::size_t k, const std::int16_t* a, std::size_t lda,
              const std::int16_t* b, std::size_t ldb, std::int64_t* c, std::size_t ldc) noexcept {
  gemm(m, n, k, a, lda, b, ldb, c, ldc);
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

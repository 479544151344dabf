// SPDX-License-Identifier: Apache-2.0
// gemm_s16x8 and gemm_s16 (emha/kernels/gemm_s16.hpp): one row of a against Dot16::cols rows of b
// at a time (dot_s16_arch.hpp), the loads of a shared by their sums, n's tail the same call with
// fewer rows:
//   gemm_s16x8  int32 sums of 256 products at a time (exact: a product is at most 2^22), each
//               chunk's added to the int64 totals;
//   gemm_s16    int64 sums throughout (two int16 x int16 products can overflow int32).
// Integer sums: the reference's values on every variant.

#include "emha/kernels/gemm_s16.hpp"
#include "isa_kernels.hpp"
#include "kernels/dot_s16_arch.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

namespace {

constexpr std::size_t chunk = 256;  // int16 x int8 products an int32 sum holds exactly

// c[j] = sum_p a[p] * b[j * ldb + p] for j < Cols.
template <std::size_t Cols>
void row_block(std::size_t k, const std::int16_t* a, const std::int8_t* b, std::size_t ldb, std::int64_t* c) noexcept {
  for (std::size_t j = 0; j < Cols; ++j) c[j] = 0;
  for (std::size_t p0 = 0; p0 < k; p0 += chunk) {
    std::int32_t s[Cols];
    Dot16::partial<Cols>(k - p0 < chunk ? k - p0 : chunk, a + p0, b + p0, ldb, s);
    for (std::size_t j = 0; j < Cols; ++j) c[j] += s[j];
  }
}
template <std::size_t Cols>
void row_block(std::size_t k, const std::int16_t* a, const std::int16_t* b, std::size_t ldb, std::int64_t* c) noexcept {
  Dot16::partial<Cols>(k, a, b, ldb, c);
}

template <class B>
void gemm(std::size_t m, std::size_t n, std::size_t k, const std::int16_t* a, std::size_t lda, const B* b,
          std::size_t ldb, std::int64_t* c, std::size_t ldc) noexcept {
  constexpr std::size_t cols = Dot16::cols;
  for (std::size_t i = 0; i < m; ++i) {
    const std::int16_t* ai = a + i * lda;
    std::int64_t* ci = c + i * ldc;
    std::size_t j = 0;
    for (; j + cols <= n; j += cols) row_block<cols>(k, ai, b + j * ldb, ldb, ci + j);
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

// SPDX-License-Identifier: Apache-2.0
// gemm_s8 (emha/kernels/gemm_s8.hpp): four rows of b share each step's load of a's row, their
// sums in four accumulators (DotS8, dot_s8_arch.hpp); k's tail past the last whole step and n's
// past the last four rows are scalar. Integer sums: the reference's values on every variant.

#include "emha/kernels/gemm_s8.hpp"
#include "isa_kernels.hpp"
#include "kernels/dot_s8_arch.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

namespace {

// a[p] * b[p] for p in [from, k).
inline std::int32_t tail(std::size_t from, std::size_t k, const std::int8_t* a, const std::int8_t* b) noexcept {
  std::int32_t s = 0;
  for (std::size_t p = from; p < k; ++p) s += std::int32_t(a[p]) * b[p];
  return s;
}

}  // namespace

void gemm_s8(std::size_t m, std::size_t n, std::size_t k, const std::int8_t* a, std::size_t lda,
             const std::int8_t* b, std::size_t ldb, std::int32_t* c, std::size_t ldc) noexcept {
  using D = DotS8;
  const std::size_t kv = k - k % D::step;  // elements the vector steps cover
  for (std::size_t i = 0; i < m; ++i, a += lda, c += ldc) {
    std::size_t j = 0;
    for (; j + 4 <= n; j += 4) {
      const std::int8_t* b0 = b + j * ldb;
      const std::int8_t *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
      D::acc s0 = D::zero(), s1 = D::zero(), s2 = D::zero(), s3 = D::zero();
      for (std::size_t p = 0; p < kv; p += D::step) {
        const D::in x = D::load(a + p);
        s0 = D::madd(s0, x, D::load(b0 + p));
        s1 = D::madd(s1, x, D::load(b1 + p));
        s2 = D::madd(s2, x, D::load(b2 + p));
        s3 = D::madd(s3, x, D::load(b3 + p));
      }
      c[j] = D::sum(s0) + tail(kv, k, a, b0);
      c[j + 1] = D::sum(s1) + tail(kv, k, a, b1);
      c[j + 2] = D::sum(s2) + tail(kv, k, a, b2);
      c[j + 3] = D::sum(s3) + tail(kv, k, a, b3);
    }
    for (; j < n; ++j) {
      const std::int8_t* bj = b + j * ldb;
      D::acc s = D::zero();
      for (std::size_t p = 0; p < kv; p += D::step) s = D::madd(s, D::load(a + p), D::load(bj + p));
      c[j] = D::sum(s) + tail(kv, k, a, bj);
    }
  }
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

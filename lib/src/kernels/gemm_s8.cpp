// SPDX-License-Identifier: Apache-2.0
// gemm_s8 (emha/kernels/gemm_s8.hpp): blocks of DotS8::rows rows of a (dot_s8_arch.hpp) times four
// rows of b, every step's loads shared across the block, its sums in rows x 4 accumulators; k's
// tail past the last whole step, n's past the last four rows and m's past the last block are the
// same loops with fewer rows. Integer sums: the reference's values on every variant.

#include "emha/kernels/gemm_s8.hpp"
#include "isa_kernels.hpp"
#include "kernels/dot_s8_arch.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

namespace {

using D = DotS8;

// a[p] * b[p] for p in [from, k).
inline std::int32_t tail(std::size_t from, std::size_t k, const std::int8_t* a, const std::int8_t* b) noexcept {
  std::int32_t s = 0;
  for (std::size_t p = from; p < k; ++p) s += std::int32_t(a[p]) * b[p];
  return s;
}

// c[r][j] for R rows of a (stride lda) and C rows of b (stride ldb), c's rows ldc apart.
template <std::size_t R, std::size_t C>
inline void block(std::size_t k, const std::int8_t* a, std::size_t lda, const std::int8_t* b, std::size_t ldb,
                  std::int32_t* c, std::size_t ldc) noexcept {
  const std::size_t kv = k - k % D::step;  // elements the vector steps cover
  D::acc s[R][C];
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t j = 0; j < C; ++j) s[r][j] = D::zero();
  for (std::size_t p = 0; p < kv; p += D::step) {
    D::in x[R];
    for (std::size_t r = 0; r < R; ++r) x[r] = D::load(a + r * lda + p);
    for (std::size_t j = 0; j < C; ++j) {
      const D::in y = D::load(b + j * ldb + p);
      for (std::size_t r = 0; r < R; ++r) s[r][j] = D::madd(s[r][j], x[r], y);
    }
  }
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t j = 0; j < C; ++j) c[r * ldc + j] = D::sum(s[r][j]) + tail(kv, k, a + r * lda, b + j * ldb);
}

// One row of a against four of b, the accumulators named: GCC 12 keeps the array of the general
// block in memory when its accumulators are core registers (Helium's VMLADAVA, the M4's SMLAD),
// five stores per step.
template <>
inline void block<1, 4>(std::size_t k, const std::int8_t* a, std::size_t, const std::int8_t* b, std::size_t ldb,
                        std::int32_t* c, std::size_t) noexcept {
  const std::size_t kv = k - k % D::step;
  const std::int8_t *b0 = b, *b1 = b + ldb, *b2 = b + 2 * ldb, *b3 = b + 3 * ldb;
  D::acc s0 = D::zero(), s1 = D::zero(), s2 = D::zero(), s3 = D::zero();
  for (std::size_t p = 0; p < kv; p += D::step) {
    const D::in x = D::load(a + p);
    s0 = D::madd(s0, x, D::load(b0 + p));
    s1 = D::madd(s1, x, D::load(b1 + p));
    s2 = D::madd(s2, x, D::load(b2 + p));
    s3 = D::madd(s3, x, D::load(b3 + p));
  }
  c[0] = D::sum(s0) + tail(kv, k, a, b0);
  c[1] = D::sum(s1) + tail(kv, k, a, b1);
  c[2] = D::sum(s2) + tail(kv, k, a, b2);
  c[3] = D::sum(s3) + tail(kv, k, a, b3);
}

// R rows of a against every row of b.
template <std::size_t R>
inline void rows(std::size_t n, std::size_t k, const std::int8_t* a, std::size_t lda, const std::int8_t* b,
                 std::size_t ldb, std::int32_t* c, std::size_t ldc) noexcept {
  std::size_t j = 0;
  for (; j + 4 <= n; j += 4) block<R, 4>(k, a, lda, b + j * ldb, ldb, c + j, ldc);
  for (; j < n; ++j) block<R, 1>(k, a, lda, b + j * ldb, ldb, c + j, ldc);
}

}  // namespace

void gemm_s8(std::size_t m, std::size_t n, std::size_t k, const std::int8_t* a, std::size_t lda,
             const std::int8_t* b, std::size_t ldb, std::int32_t* c, std::size_t ldc) noexcept {
  std::size_t i = 0;
  for (; i + D::rows <= m; i += D::rows) rows<D::rows>(n, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc);
  for (; i < m; ++i) rows<1>(n, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc);
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

// SPDX-License-Identifier: Apache-2.0
// gemm_w8a32_rows (emha/kernels/gemm_w8a32.hpp): a product of few rows of A with an int8 B read
// in place and one float scale per row of B: a decode step's scores and context over an int8
// KvCache's rows. gemm_f32_rows' loops (gemm_f32_rows.cpp) with each vector of B widened as it
// is loaded (simd::load_s8) and the scale applied once per sum, not per value:
//   transpose (scores = Q K^T): T rows of B at a time, each a dot product with the row of A in
//     the lanes, reduced by reduce_sums (k a multiple of the lanes, a head's d_k) or one by one,
//     then times the T rows' scales;
//   none (ctx = P V): row p of B scaled through A's element (a[p] * scale[p], one float product
//     per p and row of A); four rows of A at a time in blocks of 2 vectors of columns, else
//     blocks of 8 vectors per row; each column one FMA chain over k in order.

#include <cstdint>

#include "emha/config.hpp"
#include "emha/kernels/gemm_w8a32.hpp"
#include "isa_kernels.hpp"
#include "kernels/gemm_rows_epilogue.hpp"
#include "kernels/lane_reduce.hpp"
#include "simd_arch.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {
namespace {

using simd::lanes;
using simd::vf32;

// scale_t * sum_p a[p] * b_t[p] over k for T rows of B: the vector part in lanes, the tail added
// after the reduction, then the scale.
template <std::size_t T>
inline void dots(std::size_t k, const float* a, const std::int8_t* const (&b)[T], const float* scale,
                 float (&out)[T]) noexcept {
  vf32 acc[T];
  for (std::size_t t = 0; t < T; ++t) acc[t] = simd::splat(0.0f);
  std::size_t p = 0;
  for (; p + lanes <= k; p += lanes) {
    const vf32 av = simd::load(a + p);
#pragma GCC unroll 4
    for (std::size_t t = 0; t < T; ++t) acc[t] = simd::fmadd(av, simd::load_s8(b[t] + p), acc[t]);
  }
  for (std::size_t t = 0; t < T; ++t) {
    float x = reduce_sum(acc[t]);
    for (std::size_t q = p; q < k; ++q) x = simd::fmadd(a[q], float(b[t][q]), x);
    out[t] = scale[t] * x;
  }
}

// dots() for k and T multiples of the lanes, into c[j .. j + T) through the epilogue.
template <std::size_t T>
inline void dots_across(std::size_t k, const float* a, const std::int8_t* const (&b)[T], const float* scale,
                        std::size_t j, float* c, const GemmOptions& o) noexcept {
  static_assert(T % lanes == 0);
  vf32 acc[T];
  for (std::size_t t = 0; t < T; ++t) acc[t] = simd::splat(0.0f);
  for (std::size_t p = 0; p < k; p += lanes) {
    const vf32 av = simd::load(a + p);
#pragma GCC unroll 16
    for (std::size_t t = 0; t < T; ++t) acc[t] = simd::fmadd(av, simd::load_s8(b[t] + p), acc[t]);
  }
  for (std::size_t g = 0; g < T; g += lanes)
    store_epilogue(simd::load(scale + g) * reduce_sums(acc + g), j + g, c, o);
}

void rows_nt(std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda,
             const std::int8_t* b, std::size_t ldb, const float* scale, float* c, std::size_t ldc,
             const GemmOptions& o) noexcept {
  // gemm_f32_rows' chains: at least 8 (the FMA latency), `lanes` on lean-stack builds.
  constexpr std::size_t T = simd::lean_stack ? lanes : lanes > 8 ? lanes : 8;
  const bool across = k % lanes == 0;
  std::size_t j = 0;
  for (; j + T <= n; j += T) {
    const std::int8_t* br[T];
    for (std::size_t t = 0; t < T; ++t) br[t] = b + (j + t) * ldb;
    for (std::size_t i = 0; i < m; ++i) {
      if (across) {
        dots_across<T>(k, a + i * lda, br, scale + j, j, c + i * ldc, o);
        continue;
      }
      float d[T];
      dots<T>(k, a + i * lda, br, scale + j, d);
      for (std::size_t t = 0; t < T; ++t) c[i * ldc + j + t] = epilogue(d[t], j + t, c[i * ldc + j + t], o);
    }
  }
  for (; j < n; ++j) {
    const std::int8_t* const br[1] = {b + j * ldb};
    for (std::size_t i = 0; i < m; ++i) {
      float d[1];
      dots<1>(k, a + i * lda, br, scale + j, d);
      c[i * ldc + j] = epilogue(d[0], j, c[i * ldc + j], o);
    }
  }
}

// Columns [j, j + V lanes) of row ai * (scale B) into ci: V chains over k, in order.
template <std::size_t V>
inline void row_block(std::size_t k, const float* ai, const std::int8_t* b, std::size_t ldb, const float* scale,
                      std::size_t j, float* ci, const GemmOptions& o) noexcept {
  vf32 acc[V];
  for (std::size_t v = 0; v < V; ++v) acc[v] = simd::splat(0.0f);
  for (std::size_t p = 0; p < k; ++p) {
    const auto av = simd::splat_operand(ai[p] * scale[p]);
    const std::int8_t* bp = b + p * ldb + j;
#pragma GCC unroll 8
    for (std::size_t v = 0; v < V; ++v) acc[v] = simd::fmadd(av, simd::load_s8(bp + v * lanes), acc[v]);
  }
  for (std::size_t v = 0; v < V; ++v) {
    float x[lanes];
    simd::store(x, acc[v]);
    for (std::size_t l = 0; l < lanes; ++l) {
      const std::size_t col = j + v * lanes + l;
      ci[col] = epilogue(x[l], col, ci[col], o);
    }
  }
}

// R rows of A times columns [j, j + V lanes) of scale B into C: R x V accumulators, B's rows
// widened once for R rows of A.
template <std::size_t R, std::size_t V>
inline void rows_block(std::size_t k, const float* a, std::size_t lda, const std::int8_t* b, std::size_t ldb,
                       const float* scale, std::size_t j, float* c, std::size_t ldc, const GemmOptions& o) noexcept {
  vf32 acc[R][V];
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t v = 0; v < V; ++v) acc[r][v] = simd::splat(0.0f);
  for (std::size_t p = 0; p < k; ++p) {
    const std::int8_t* bp = b + p * ldb + j;
    vf32 bv[V];
    for (std::size_t v = 0; v < V; ++v) bv[v] = simd::load_s8(bp + v * lanes);
#pragma GCC unroll 4
    for (std::size_t r = 0; r < R; ++r) {
      const vf32 av = simd::splat(a[r * lda + p] * scale[p]);
      for (std::size_t v = 0; v < V; ++v) acc[r][v] = simd::fmadd(av, bv[v], acc[r][v]);
    }
  }
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t v = 0; v < V; ++v) {
      float x[lanes];
      simd::store(x, acc[r][v]);
      for (std::size_t l = 0; l < lanes; ++l) {
        const std::size_t col = j + v * lanes + l;
        float* cc = c + r * ldc + col;
        *cc = epilogue(x[l], col, *cc, o);
      }
    }
}

// One row of A: blocks of 8 vectors, then single vectors, then single columns.
void row_nn(std::size_t k, const float* ai, const std::int8_t* b, std::size_t ldb, const float* scale,
            std::size_t n, float* ci, const GemmOptions& o) noexcept {
  constexpr std::size_t V = 8;
  std::size_t j = 0;
  for (; j + V * lanes <= n; j += V * lanes) row_block<V>(k, ai, b, ldb, scale, j, ci, o);
  for (; j + lanes <= n; j += lanes) row_block<1>(k, ai, b, ldb, scale, j, ci, o);
  for (; j < n; ++j) {  // fewer than `lanes` columns left: one chain each
    float x = 0.0f;
    for (std::size_t p = 0; p < k; ++p) x = simd::fmadd(ai[p] * scale[p], float(b[p * ldb + j]), x);
    ci[j] = epilogue(x, j, ci[j], o);
  }
}

// Rows of A four at a time (two on lean-stack builds) in blocks of 2 vectors of columns; the
// columns past the last block, and the rows past the last four, as row_nn.
void rows_nn(std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda,
             const std::int8_t* b, std::size_t ldb, const float* scale, float* c, std::size_t ldc,
             const GemmOptions& o) noexcept {
  constexpr std::size_t R = simd::lean_stack ? 2 : 4, V = 2;
  std::size_t i = 0;
  for (; i + R <= m; i += R) {
    std::size_t j = 0;
    for (; j + V * lanes <= n; j += V * lanes)
      rows_block<R, V>(k, a + i * lda, lda, b, ldb, scale, j, c + i * ldc, ldc, o);
    if (j < n)
      for (std::size_t r = 0; r < R; ++r)
        row_nn(k, a + (i + r) * lda, b + j, ldb, scale, n - j, c + (i + r) * ldc + j, offset(o, j));
  }
  for (; i < m; ++i) row_nn(k, a + i * lda, b, ldb, scale, n, c + i * ldc, o);
}

}  // namespace

void gemm_w8a32_rows(std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda,
                     const std::int8_t* b, std::size_t ldb, const float* b_scale, Trans trans_b, float* c,
                     std::size_t ldc, const GemmOptions& o) noexcept {
  if (m == 0 || n == 0) return;
  EMHA_ASSERT(c && (k == 0 || (a && b && b_scale)) && lda >= k && ldc >= n &&
              ldb >= (trans_b == Trans::none ? n : k));
  if (trans_b == Trans::transpose)
    rows_nt(m, n, k, a, lda, b, ldb, b_scale, c, ldc, o);
  else
    rows_nn(m, n, k, a, lda, b, ldb, b_scale, c, ldc, o);
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

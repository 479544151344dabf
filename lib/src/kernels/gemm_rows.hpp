// SPDX-License-Identifier: Apache-2.0
#pragma once
// The loops of the few-row products that read B in place: gemm_f32_rows (float B,
// gemm_f32_rows.cpp) and gemm_w8a32_rows (int8 B with one float scale per row of B,
// gemm_w8a32_rows.cpp). A decode step's attention is one (or a few) query rows against a head's
// cached keys and values, held with a row stride in the cache: gemm_f32 would pack those K x d_k
// values for one row of A, moving every byte twice (the packing was ~40% of a step at 2048 cached
// positions). B is read through load_b (int8 widened to float as it is loaded) and scaled through
// the Scale policy, once per sum and never per value:
//   transpose (scores = Q K^T): T = max(8, lanes) rows of B at a time, each a dot product with
//     the row of A summed in the lanes (T independent chains), then all T reduced at once by a
//     transpose-add network (reduce_sums) when k is a multiple of the lanes (a head's d_k), else
//     one by one; then times the T rows' scales. Those rows of B stay in L1 while every row of
//     A uses them.
//   none (ctx = P V): row p of B scaled through A's element (a[p] * scale[p], one float product
//     per p and row of A); four rows of A at a time in blocks of 2 vectors of C (B's rows
//     streamed once per four rows), else blocks of 8 vectors per row; each column one FMA chain
//     over k in order (as gemm_f32's tile sums it).
// Each row of A gets the same bits alone as among others (a GQA group's rows may be split over
// threads).

#include <cstdint>

#include "emha/kernels/gemm.hpp"
#include "isa_kernels.hpp"
#include "kernels/lane_reduce.hpp"
#include "simd_arch.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {
namespace rows {

using simd::lanes;
using simd::vf32;

// `lanes` values of B from p, as floats.
inline vf32 load_b(const float* p) noexcept { return simd::load(p); }
inline vf32 load_b(const std::int8_t* p) noexcept { return simd::load_s8(p); }

// The scale of B's row `row` applied to x: none for float B, scale[row] * x for int8 B (on
// `lanes` consecutive rows for a vector).
struct NoScale {
  float operator()(float x, std::size_t) const noexcept { return x; }
  vf32 operator()(vf32 x, std::size_t) const noexcept { return x; }
};
struct RowScale {
  const float* scale;
  float operator()(float x, std::size_t row) const noexcept { return scale[row] * x; }
  vf32 operator()(vf32 x, std::size_t row) const noexcept { return simd::load(scale + row) * x; }
};

// c = alpha * x (+ bias) (+ beta * c): the epilogue of one output.
inline float epilogue(float x, std::size_t j, float c, const GemmOptions& o) noexcept {
  float y = o.alpha * x;
  if (o.bias) y += o.bias[j];
  if (o.beta != 0.0f) y += o.beta * c;
  return y;
}

// epilogue() on the `lanes` outputs c[j .. j + lanes): the same operations in the same order,
// in lanes (a scalar epilogue per output after a vector store cost a quarter of the scores).
inline void store_epilogue(vf32 x, std::size_t j, float* c, const GemmOptions& o) noexcept {
  vf32 y = simd::splat(o.alpha) * x;
  if (o.bias) y = y + simd::load(o.bias + j);
  if (o.beta != 0.0f) y = y + simd::splat(o.beta) * simd::load(c + j);
  simd::store(c + j, y);
}

// o for the columns from j on: its bias shifted with them.
inline GemmOptions offset(GemmOptions o, std::size_t j) noexcept {
  if (o.bias) o.bias += j;
  return o;
}

// s(sum_p a[p] * b_t[p], j + t) over k for T rows of B from row j: the vector part in lanes, the
// tail added after the reduction, then the scale.
template <std::size_t T, class B, class Scale>
inline void dots(std::size_t k, const float* a, const B* const (&b)[T], Scale s, std::size_t j,
                 float (&out)[T]) noexcept {
  static_assert(T <= 16);
  vf32 acc[T];
  for (std::size_t t = 0; t < T; ++t) acc[t] = simd::splat(0.0f);
  std::size_t p = 0;
  for (; p + lanes <= k; p += lanes) {
    const vf32 av = simd::load(a + p);
#pragma GCC unroll 4
    for (std::size_t t = 0; t < T; ++t) acc[t] = simd::fmadd(av, load_b(b[t] + p), acc[t]);
  }
  for (std::size_t t = 0; t < T; ++t) {
    float x = reduce_sum(acc[t]);
    for (std::size_t q = p; q < k; ++q) x = simd::fmadd(a[q], float(b[t][q]), x);
    out[t] = s(x, j + t);
  }
}

// dots() for k a multiple of the lanes and T a multiple of them, into c[j .. j + T) through the
// epilogue: the T sums by reduce_sums, a few shuffles and adds per vector of results instead of
// a reduction per dot product (which cost as much as the products at d_k = 64).
template <std::size_t T, class B, class Scale>
inline void dots_across(std::size_t k, const float* a, const B* const (&b)[T], Scale s, std::size_t j, float* c,
                        const GemmOptions& o) noexcept {
  static_assert(T % lanes == 0);
  vf32 acc[T];
  for (std::size_t t = 0; t < T; ++t) acc[t] = simd::splat(0.0f);
  for (std::size_t p = 0; p < k; p += lanes) {
    const vf32 av = simd::load(a + p);
#pragma GCC unroll 16
    for (std::size_t t = 0; t < T; ++t) acc[t] = simd::fmadd(av, load_b(b[t] + p), acc[t]);
  }
  for (std::size_t g = 0; g < T; g += lanes) store_epilogue(s(reduce_sums(acc + g), j + g), j + g, c, o);
}

template <class B, class Scale>
void nt(std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda, const B* b, std::size_t ldb,
        Scale s, float* c, std::size_t ldc, const GemmOptions& o) noexcept {
  // At least 8 rows of B: 8 independent chains (4 left the FMA latency exposed: a head's dot is
  // only d_k / lanes steps long); `lanes` of them where that is more, for one reduce_sums.
  // Lean-stack builds (Cortex-M: MVE has 8 vector registers) keep `lanes` chains: eight spill,
  // and the frame takes this kernel over the 1 KiB stack budget (tests/firmware/stack_budget.py).
  constexpr std::size_t T = simd::lean_stack ? lanes : lanes > 8 ? lanes : 8;
  const bool across = k % lanes == 0;
  std::size_t j = 0;
  for (; j + T <= n; j += T) {
    const B* br[T];
    for (std::size_t t = 0; t < T; ++t) br[t] = b + (j + t) * ldb;
    for (std::size_t i = 0; i < m; ++i) {
      if (across) {
        dots_across<T>(k, a + i * lda, br, s, j, c + i * ldc, o);
        continue;
      }
      float d[T];
      dots<T>(k, a + i * lda, br, s, j, d);
      for (std::size_t t = 0; t < T; ++t) c[i * ldc + j + t] = epilogue(d[t], j + t, c[i * ldc + j + t], o);
    }
  }
  for (; j < n; ++j) {
    const B* const br[1] = {b + j * ldb};
    for (std::size_t i = 0; i < m; ++i) {
      float d[1];
      dots<1>(k, a + i * lda, br, s, j, d);
      c[i * ldc + j] = epilogue(d[0], j, c[i * ldc + j], o);
    }
  }
}

// Columns [j, j + V lanes) of row ai * (scaled B) into ci: V chains over k, in order.
template <std::size_t V, class B, class Scale>
inline void row_block(std::size_t k, const float* ai, const B* b, std::size_t ldb, Scale s, std::size_t j,
                      float* ci, const GemmOptions& o) noexcept {
  vf32 acc[V];
  for (std::size_t v = 0; v < V; ++v) acc[v] = simd::splat(0.0f);
  for (std::size_t p = 0; p < k; ++p) {
    const auto av = simd::splat_operand(s(ai[p], p));
    const B* bp = b + p * ldb + j;
#pragma GCC unroll 8
    for (std::size_t v = 0; v < V; ++v) acc[v] = simd::fmadd(av, load_b(bp + v * lanes), acc[v]);
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

// R rows of A times columns [j, j + V lanes) of (scaled) B into C: R x V accumulators (each
// column one chain over k in order, as row_block's), so B's rows are loaded once for R rows of A.
template <std::size_t R, std::size_t V, class B, class Scale>
inline void rows_block(std::size_t k, const float* a, std::size_t lda, const B* b, std::size_t ldb, Scale s,
                       std::size_t j, float* c, std::size_t ldc, const GemmOptions& o) noexcept {
  vf32 acc[R][V];
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t v = 0; v < V; ++v) acc[r][v] = simd::splat(0.0f);
  for (std::size_t p = 0; p < k; ++p) {
    const B* bp = b + p * ldb + j;
    vf32 bv[V];
    for (std::size_t v = 0; v < V; ++v) bv[v] = load_b(bp + v * lanes);
#pragma GCC unroll 4
    for (std::size_t r = 0; r < R; ++r) {
      const vf32 av = simd::splat(s(a[r * lda + p], p));
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

// One row of A: blocks of 8 vectors (a whole head of d_k = 64 on AVX2 in one pass over B's rows,
// 8 chains to cover the FMA latency), then single vectors, then single columns.
template <class B, class Scale>
void row_nn(std::size_t k, const float* ai, const B* b, std::size_t ldb, Scale s, std::size_t n, float* ci,
            const GemmOptions& o) noexcept {
  constexpr std::size_t V = 8;
  std::size_t j = 0;
  for (; j + V * lanes <= n; j += V * lanes) row_block<V>(k, ai, b, ldb, s, j, ci, o);
  for (; j + lanes <= n; j += lanes) row_block<1>(k, ai, b, ldb, s, j, ci, o);
  for (; j < n; ++j) {  // fewer than `lanes` columns left: one chain each
    float x = 0.0f;
    for (std::size_t p = 0; p < k; ++p) x = simd::fmadd(s(ai[p], p), float(b[p * ldb + j]), x);
    ci[j] = epilogue(x, j, ci[j], o);
  }
}

// Rows of A four at a time (two on lean-stack builds; a decode step's GQA group, P V), in blocks
// of 2 vectors of columns: B is read once per four rows instead of once per row; the columns
// past the last 2-vector block, and the rows past the last four, as row_nn. Every output is the
// same chain over k.
template <class B, class Scale>
void nn(std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda, const B* b, std::size_t ldb,
        Scale s, float* c, std::size_t ldc, const GemmOptions& o) noexcept {
  constexpr std::size_t R = simd::lean_stack ? 2 : 4, V = 2;  // 2 x 2 accumulators in 8 MVE registers
  std::size_t i = 0;
  for (; i + R <= m; i += R) {
    std::size_t j = 0;
    for (; j + V * lanes <= n; j += V * lanes) rows_block<R, V>(k, a + i * lda, lda, b, ldb, s, j, c + i * ldc, ldc, o);
    if (j < n)
      for (std::size_t r = 0; r < R; ++r)
        row_nn(k, a + (i + r) * lda, b + j, ldb, s, n - j, c + (i + r) * ldc + j, offset(o, j));
  }
  for (; i < m; ++i) row_nn(k, a + i * lda, b, ldb, s, n, c + i * ldc, o);
}

}  // namespace rows
}  // namespace EMHA_ISA
}  // namespace emha::detail

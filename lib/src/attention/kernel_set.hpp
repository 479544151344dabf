#pragma once
// The kernels a forward pass runs on: the SIMD ones, or their scalar references (the oracle the
// benchmark and tests measure the SIMD path against). Static members only: a policy type.
// Calls are qualified (detail::): unqualified, argument-dependent lookup would also find the
// public emha:: entry points (which dispatch) beside this variant's kernels.

#include "emha/kernels/gemm.hpp"
#include "emha/kernels/gemm_ref.hpp"
#include "emha/kernels/norm.hpp"
#include "emha/kernels/norm_ref.hpp"
#include "emha/kernels/rope.hpp"
#include "emha/kernels/rope_ref.hpp"
#include "emha/kernels/softmax.hpp"
#include "emha/kernels/softmax_ref.hpp"
#include "isa_kernels.hpp"
#include "kernels/gemm_columns.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

struct SimdKernels {
  // A decode step's GQA/MQA query heads of a group share one pass over their K/V head
  // (group_attention.hpp), through gemm_rows: on SIMD builds only, as tile_gemm's gemm_rows (the
  // scalar path, Cortex-M, keeps its stack budget and the per-head path).
  static constexpr bool stack_groups = simd::enabled;
  static Status gemm(std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda,
                     const float* b, std::size_t ldb, Trans t, float* c, std::size_t ldc,
                     ArenaRef& arena, const GemmOptions& o) noexcept {
    return detail::gemm_f32(m, n, k, a, lda, b, ldb, t, c, ldc, arena, o);
  }
  // Few rows of A, B read in place (a decode step's attention).
  static Status gemm_rows(std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda,
                          const float* b, std::size_t ldb, Trans t, float* c, std::size_t ldc,
                          ArenaRef&, const GemmOptions& o) noexcept {
    detail::gemm_f32_rows(m, n, k, a, lda, b, ldb, t, c, ldc, o);
    return Status::ok;
  }
  // Columns [j0, j1) of C[m x n] (gemm_columns.hpp).
  static Status gemm_prepacked_columns(std::size_t m, std::size_t n, std::size_t j0,
                                       std::size_t j1, std::size_t k, const float* a,
                                       std::size_t lda, const float* packed_b,
                                       std::size_t packed_floats, float* c, std::size_t ldc,
                                       const GemmOptions& o) noexcept {
    return detail::gemm_f32_prepacked_columns(m, n, j0, j1, k, a, lda, packed_b, packed_floats, c,
                                              ldc, o);
  }
  static void softmax(std::size_t rows, std::size_t n, float* s, std::size_t lds) noexcept {
    detail::softmax_f32(rows, n, s, lds, s, lds, SoftmaxOptions{});
  }
  static void online_update(std::size_t rows, std::size_t n, float* s, std::size_t lds, float* m,
                            float* l, float* o, std::size_t ldo, std::size_t o_cols) noexcept {
    detail::softmax_online_update_f32(rows, n, s, lds, m, l, o, ldo, o_cols);
  }
  static void online_finish(std::size_t rows, std::size_t o_cols, const float* l, float* o,
                            std::size_t ldo) noexcept {
    detail::softmax_online_finish_f32(rows, o_cols, l, o, ldo);
  }
  static void layer_norm(std::size_t rows, std::size_t n, const float* x, std::size_t ldx, float* y,
                         std::size_t ldy, const float* gamma, const float* beta, float eps) noexcept {
    detail::layer_norm_f32(rows, n, x, ldx, y, ldy, gamma, beta, eps);
  }
  static void rms_norm(std::size_t rows, std::size_t n, const float* x, std::size_t ldx, float* y,
                       std::size_t ldy, const float* gamma, float eps) noexcept {
    detail::rms_norm_f32(rows, n, x, ldx, y, ldy, gamma, eps);
  }
  static Status rope(std::size_t rows, std::size_t heads, std::size_t head_dim, RopePairing pairing,
                     std::size_t pos0, const RopeTable& t, float* x, std::size_t ldx) noexcept {
    return detail::rope_f32(rows, heads, head_dim, pairing, pos0, t, x, ldx);
  }
};

struct RefKernels {
  // The oracle attends head by head (head_attention.hpp), whatever the build.
  static constexpr bool stack_groups = false;
  static Status gemm(std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda,
                     const float* b, std::size_t ldb, Trans t, float* c, std::size_t ldc,
                     ArenaRef&, const GemmOptions& o) noexcept {
    gemm_f32_ref(m, n, k, a, lda, b, ldb, t, c, ldc, o);
    return Status::ok;
  }
  static Status gemm_rows(std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda,
                          const float* b, std::size_t ldb, Trans t, float* c, std::size_t ldc,
                          ArenaRef& arena, const GemmOptions& o) noexcept {
    return gemm(m, n, k, a, lda, b, ldb, t, c, ldc, arena, o);
  }
  // The reference path always reads the weights in place (it is given no packed weights).
  static Status gemm_prepacked_columns(std::size_t, std::size_t, std::size_t, std::size_t,
                                       std::size_t, const float*, std::size_t, const float*,
                                       std::size_t, float*, std::size_t,
                                       const GemmOptions&) noexcept {
    return Status::invalid_argument;
  }
  static void softmax(std::size_t rows, std::size_t n, float* s, std::size_t lds) noexcept {
    softmax_f32_ref(rows, n, s, lds, s, lds);
  }
  static void online_update(std::size_t rows, std::size_t n, float* s, std::size_t lds, float* m,
                            float* l, float* o, std::size_t ldo, std::size_t o_cols) noexcept {
    softmax_online_update_f32_ref(rows, n, s, lds, m, l, o, ldo, o_cols);
  }
  static void online_finish(std::size_t rows, std::size_t o_cols, const float* l, float* o,
                            std::size_t ldo) noexcept {
    softmax_online_finish_f32_ref(rows, o_cols, l, o, ldo);
  }
  static void layer_norm(std::size_t rows, std::size_t n, const float* x, std::size_t ldx, float* y,
                         std::size_t ldy, const float* gamma, const float* beta, float eps) noexcept {
    layer_norm_f32_ref(rows, n, x, ldx, y, ldy, gamma, beta, eps);
  }
  static void rms_norm(std::size_t rows, std::size_t n, const float* x, std::size_t ldx, float* y,
                       std::size_t ldy, const float* gamma, float eps) noexcept {
    rms_norm_f32_ref(rows, n, x, ldx, y, ldy, gamma, eps);
  }
  static Status rope(std::size_t rows, std::size_t heads, std::size_t head_dim, RopePairing pairing,
                     std::size_t pos0, const RopeTable& t, float* x, std::size_t ldx) noexcept {
    return rope_f32_ref(rows, heads, head_dim, pairing, pos0, t, x, ldx);
  }
};

}  // namespace EMHA_ISA
}  // namespace emha::detail

// emha's public kernels and MultiHeadAttention's compiled core, forwarded to the instruction-set
// variant in use (kernel_choice.hpp): one call through the table on x86-64's run-time dispatch,
// a direct (tail) call everywhere else.

#include <cstring>

#include "dispatch/kernel_choice.hpp"
#include "emha/kernels/mask.hpp"
#include "emha/simd.hpp"

namespace emha {

const char* simd_isa() noexcept { return detail::kernels().isa; }
std::size_t simd_f32_lanes() noexcept { return detail::kernels().lanes; }

Status gemm_f32(std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda,
                const float* b, std::size_t ldb, Trans trans_b, float* c, std::size_t ldc,
                ArenaRef& scratch, const GemmOptions& options) noexcept {
  return detail::kernels().gemm_f32(m, n, k, a, lda, b, ldb, trans_b, c, ldc, scratch, options);
}
void gemm_f32_rows(std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda,
                   const float* b, std::size_t ldb, Trans trans_b, float* c, std::size_t ldc,
                   const GemmOptions& options) noexcept {
  detail::kernels().gemm_f32_rows(m, n, k, a, lda, b, ldb, trans_b, c, ldc, options);
}
Status gemm_f32_pack_b(std::size_t n, std::size_t k, const float* b, std::size_t ldb, Trans trans_b,
                       float* packed, std::size_t packed_floats) noexcept {
  return detail::kernels().gemm_f32_pack_b(n, k, b, ldb, trans_b, packed, packed_floats);
}
Status gemm_f32_prepacked(std::size_t m, std::size_t n, std::size_t k, const float* a,
                          std::size_t lda, const float* packed_b, std::size_t packed_floats,
                          float* c, std::size_t ldc, const GemmOptions& options) noexcept {
  return detail::kernels().gemm_f32_prepacked(m, n, k, a, lda, packed_b, packed_floats, c, ldc, options);
}

void softmax_f32(std::size_t rows, std::size_t n, const float* x, std::size_t ldx, float* y,
                 std::size_t ldy, const SoftmaxOptions& options) noexcept {
  detail::kernels().softmax_f32(rows, n, x, ldx, y, ldy, options);
}
void softmax_online_update_f32(std::size_t rows, std::size_t n, float* s, std::size_t lds,
                               float* row_max, float* row_sum, float* o, std::size_t ldo,
                               std::size_t o_cols) noexcept {
  detail::kernels().softmax_online_update_f32(rows, n, s, lds, row_max, row_sum, o, ldo, o_cols);
}
void softmax_online_finish_f32(std::size_t rows, std::size_t o_cols, const float* row_sum,
                               float* o, std::size_t ldo) noexcept {
  detail::kernels().softmax_online_finish_f32(rows, o_cols, row_sum, o, ldo);
}

void mask_causal_f32(std::size_t rows, std::size_t cols, std::ptrdiff_t diagonal, float* s,
                     std::size_t lds) noexcept {
  detail::kernels().mask_causal_f32(rows, cols, diagonal, s, lds);
}
void mask_key_valid_f32(std::size_t rows, std::size_t cols, std::size_t valid, float* s,
                        std::size_t lds) noexcept {
  detail::kernels().mask_key_valid_f32(rows, cols, valid, s, lds);
}
void mask_key_ignore_f32(std::size_t rows, std::size_t cols, const bool* ignore, float* s,
                         std::size_t lds) noexcept {
  detail::kernels().mask_key_ignore_f32(rows, cols, ignore, s, lds);
}
void mask_bool_f32(std::size_t rows, std::size_t cols, const bool* masked, std::size_t ldm,
                   float* s, std::size_t lds) noexcept {
  detail::kernels().mask_bool_f32(rows, cols, masked, ldm, s, lds);
}
void mask_bool_to_additive_f32(std::size_t rows, std::size_t cols, const bool* masked,
                               std::size_t ldm, float* out, std::size_t ldo) noexcept {
  detail::kernels().mask_bool_to_additive_f32(rows, cols, masked, ldm, out, ldo);
}
void mask_add_f32(std::size_t rows, std::size_t cols, const float* add, std::size_t ldm, float* s,
                  std::size_t lds) noexcept {
  detail::kernels().mask_add_f32(rows, cols, add, ldm, s, lds);
}
void mask_alibi_f32(std::size_t rows, std::size_t cols, std::ptrdiff_t diagonal, float slope,
                    float* s, std::size_t lds) noexcept {
  detail::kernels().mask_alibi_f32(rows, cols, diagonal, slope, s, lds);
}

void layer_norm_f32(std::size_t rows, std::size_t n, const float* x, std::size_t ldx, float* y,
                    std::size_t ldy, const float* gamma, const float* beta, float eps) noexcept {
  detail::kernels().layer_norm_f32(rows, n, x, ldx, y, ldy, gamma, beta, eps);
}
void rms_norm_f32(std::size_t rows, std::size_t n, const float* x, std::size_t ldx, float* y,
                  std::size_t ldy, const float* gamma, float eps) noexcept {
  detail::kernels().rms_norm_f32(rows, n, x, ldx, y, ldy, gamma, eps);
}
Status rope_f32(std::size_t rows, std::size_t heads, std::size_t head_dim, RopePairing pairing,
                std::size_t pos0, const RopeTable& table, float* x, std::size_t ldx) noexcept {
  return detail::kernels().rope_f32(rows, heads, head_dim, pairing, pos0, table, x, ldx);
}

}  // namespace emha

namespace emha::detail {

MhaPacked mha_pack_weights(const MhaDims& d, const MhaWeights& w, float* packed) noexcept {
  return kernels().pack_weights(d, w, packed);
}
Status mha_forward(const MhaDims& d, const MhaWeights& w, const MhaPacked& packed,
                   const MhaPositions& positions, ArenaRef& arena, const AttentionShape& shape,
                   Span<const float> query, Span<const float> key, Span<const float> value,
                   Span<float> out, const ForwardOptions& options, const KvCacheView* cache) noexcept {
  return kernels().forward(d, w, packed, positions, arena, shape, query, key, value, out, options, cache);
}
Status mha_forward_ref(const MhaDims& d, const MhaWeights& w, const MhaPositions& positions,
                       ArenaRef& arena, const AttentionShape& shape, Span<const float> query,
                       Span<const float> key, Span<const float> value, Span<float> out,
                       const ForwardOptions& options, const KvCacheView* cache) noexcept {
  return kernels().forward_ref(d, w, positions, arena, shape, query, key, value, out, options, cache);
}

}  // namespace emha::detail

#if !EMHA_X86_DISPATCH
namespace emha {
// One variant: selecting it is a no-op, any other name is refused.
Status select_simd_isa(const char* isa) noexcept {
  return isa && std::strcmp(isa, detail::kernels().isa) == 0 ? Status::ok : Status::invalid_argument;
}
}  // namespace emha
#endif

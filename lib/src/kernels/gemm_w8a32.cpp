// SPDX-License-Identifier: Apache-2.0
// W8A32 GEMM (emha/kernels/gemm_w8a32.hpp): C = alpha * A (scale * W)^T (+ bias) (+ beta * C)
// with W int8 [n x k], each weight dequantized as float(q) * scale[j] (rounded to float). gemm_f32's blocked loops (the BLIS order: columns by NC, k by KC, rows by
// MC, then one NR-column panel of W^T at a time) over panels of W^T:
//   in place    W's rows packed as dequantized floats into the caller's scratch: each panel just
//               before its tiles when the rows run as one block (gemm_per_panel), else a block
//               of panels once for all row blocks (gemm_f32's scratch, its sizes).
//   pre-packed  the int8 panels of gemm_w8a32_pack_b, dequantized as the tiles load them
//               (gemm_load_b: widened by simd::load_s8, times the column scales); one row of C (a decode step) over gemm_target.gemv_panels
//               panels side by side (gemm_gemv.hpp), which sums as the tiles do.
// Both run the portable tile (gemm_ukernel_portable) over the same dequantized weights
// (float(q) * scale[j], one rounding either way): each output is gemm_f32's FMA chain over k in
// the same order, so in place and pre-packed give the same bits, and the bits of gemm_f32 on the
// dequantized W where gemm_f32 takes the same tiles.

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "emha/config.hpp"
#include "emha/kernels/gemm_w8a32.hpp"
#include "gemm_ukernel.hpp"
#include "gemm_ukernel_compact.hpp"
#include "isa_kernels.hpp"
#include "kernels/gemm_columns.hpp"
#include "kernels/gemm_driver.hpp"
#include "kernels/gemm_gemv.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {
namespace {

// One panel of op(B) = W^T: `cols` <= NR rows of W (kc int8 from w, rows ldw apart) ->
// bp[kc][NR] as T, columns past `cols` zero: float, dequantized (float(q) * scale[q], scale[0 ..
// cols) the rows' scales), or int8 as stored (scale unread: the tiles apply it).
// Floats go through T x T blocks (T = simd::transpose_block): T rows of T int8 widened into a
// local block, transposed into the panel (gemm_f32's B^T packing); in place, a decode step's
// product packs every weight it reads (element by element, the packing took 3x the GEMV).
// xsimd builds only: on MVE (GCC 12) the gather transpose out of the local block gave wrong
// panels in the firmware tests, and the scalar build gains nothing from blocks. Out of line:
// inlined, its locals sat in the driver's frame under every tile (Cortex-M's stack budget).
template <class T>
[[gnu::noinline]] void pack_w_panel(std::size_t kc, std::size_t cols, const std::int8_t* w, std::size_t ldw,
                  const float* scale, T* bp) noexcept {
  std::size_t kc_t = 0, cols_t = 0;
  if constexpr (std::is_same<T, float>::value && simd::enabled && !simd::is_mve) {
    constexpr std::size_t B = simd::transpose_block;
    kc_t = kc / B * B;
    cols_t = cols / B * B;
    for (std::size_t p = 0; p < kc_t; p += B)
      for (std::size_t q = 0; q < cols_t; q += B) {
        float block[B * B];
        for (std::size_t r = 0; r < B; ++r)
          for (std::size_t i = 0; i < B; ++i) block[r * B + i] = float(w[(q + r) * ldw + p + i]) * scale[q + r];
        simd::transpose_block_f32(block, B, bp + p * gemm_nr + q, gemm_nr);
      }
  }
  for (std::size_t p = 0; p < kc; ++p) {
    for (std::size_t q = p < kc_t ? cols_t : 0; q < cols; ++q) {
      if constexpr (std::is_same<T, float>::value)
        bp[p * gemm_nr + q] = float(w[q * ldw + p]) * scale[q];
      else
        bp[p * gemm_nr + q] = w[q * ldw + p];
    }
    for (std::size_t q = cols; q < gemm_nr; ++q) bp[p * gemm_nr + q] = T(0);
  }
}

// W's rows [0, nc) (k block at w: kc int8 each; scale[0 .. nc) theirs) -> bp[panel][kc][NR],
// one panel after another.
template <class T>
void pack_w_block(std::size_t kc, std::size_t nc, const std::int8_t* w, std::size_t ldw,
                  const float* scale, T* bp) noexcept {
  for (std::size_t j = 0; j < nc; j += gemm_nr, bp += kc * gemm_nr)
    pack_w_panel(kc, gemm_min(gemm_nr, nc - j), w + j * ldw, ldw, scale + j, bp);
}

// Bytes of the scales and of the int8 panels of W [n x k] in this build's panel width.
struct PackedSizes {
  std::size_t scale_bytes, n_padded;
};
PackedSizes packed_sizes(std::size_t n) noexcept {
  return {gemm_w8a32_packed_scale_bytes(n), gemm_round_up(n, gemm_nr)};
}

// Whether `bytes` hold W [n x k]'s scales and panels (k > 0) in this build's layout.
bool packed_fits(std::size_t n, std::size_t k, std::size_t bytes) noexcept {
  const PackedSizes s = packed_sizes(n);
  return bytes >= s.scale_bytes && (bytes - s.scale_bytes) / k >= s.n_padded;
}

bool float_aligned(const void* p) noexcept {
  return reinterpret_cast<std::uintptr_t>(p) % alignof(float) == 0;
}

// The mc rows of one panel ([kc][NR] of TB): MR-row tiles, or k blocks.
template <class TB>
void panel_rows(std::size_t kc, const float* a, std::size_t lda, const TB* panel, float* c,
                std::size_t ldc, std::size_t mc, std::size_t nr, const GemmEpilogue& e,
                bool k_blocks) noexcept {
  if (k_blocks) return panel_blocked(kc, a, lda, panel, c, ldc, mc, nr, e);
  row_tiles<gemm_mr>(0, mc, [&](std::size_t i, std::size_t rows) __attribute__((always_inline)) {
    if constexpr (simd::optimize_size)
      detail::gemm_ukernel_compact(kc, a + i * lda, lda, panel, c + i * ldc, ldc, rows, nr, e);
    else
      detail::gemm_ukernel_portable(kc, a + i * lda, lda, panel, c + i * ldc, ldc, rows, nr, e);
  });
}

// A pre-packed int8 panel [kc][NR] -> fp [kc][NR] floats, each float(q) * scale[col] as
// gemm_load_b dequantizes it: a block of many rows reads the panel through float tiles, each
// weight widened once rather than once per tile, in the same FMA order (the same bits).
[[maybe_unused]] void dequantize_panel(std::size_t kc, const std::int8_t* panel, const float* scale, float* fp) noexcept {
  constexpr std::size_t L = simd::lanes;
  for (std::size_t p = 0; p < kc; ++p)
    for (std::size_t v = 0; v < gemm_nr; v += L)
      simd::store(fp + p * gemm_nr + v, gemm_load_b(panel + p * gemm_nr + v, scale, v));
}

// One row of C over whole groups of gemm_target.gemv_panels pre-packed panels (gemm_gemv.hpp).
// Returns the columns done (a multiple of their width); the rest go to the tiles.
std::size_t row_gemv(std::size_t kc, const std::int8_t* block, std::size_t nc, const float* a,
                     float* c, const GemmEpilogue& e, bool k_blocks) noexcept {
  std::size_t jr = 0;
  if constexpr (gemm_target.gemv_panels != 0) {
    constexpr std::size_t P = gemm_target.gemv_panels;
    for (; jr + P * gemm_nr <= nc; jr += P * gemm_nr) {
      const GemmEpilogue ej{e.alpha, e.beta, e.bias ? e.bias + jr : nullptr, e.scale + jr};
      if (k_blocks)
        detail::gemm_gemv_f32<true>(kc, a, block + jr * kc, gemm_nr * kc, c + jr, ej);
      else
        detail::gemm_gemv_f32<false>(kc, a, block + jr * kc, gemm_nr * kc, c + jr, ej);
    }
  }
  return jr;
}

// Whether pre-packed panels may be dequantized for a row block (bp): gemm_columns.hpp.
template <bool InPlace>
inline constexpr bool dequantizes_panels = !InPlace && gemm_w8_dequantizes_panels;

// The blocked loops for columns [j0, j1) of C (j0 a multiple of NR; the whole product: 0, n).
// InPlace: w is W (rows ldw apart), its panels packed as dequantized floats into bp (scratch:
// one panel, or one block of min(n, nc) columns). Otherwise w is the packed panels (k block pc
// at w + pc * n_padded, its panel for column j at + j * kc), scale holds n_padded floats (zero
// past n) and bp, when not null (kc x NR floats), takes each panel dequantized for a row block
// of more than one tile.
template <bool InPlace>
void w8_blocked(std::size_t m, std::size_t n_padded, std::size_t j0, std::size_t j1, std::size_t k,
                const float* a, std::size_t lda, const std::int8_t* w, std::size_t ldw,
                const float* scale, float* c, std::size_t ldc, float* bp,
                const GemmOptions& o) noexcept {
  using TB = std::conditional_t<InPlace, float, std::int8_t>;
  const std::size_t nc_max = gemm_nc(gemm_min(k, gemm_kc));
  for (std::size_t jc = j0; jc < j1; jc += nc_max) {
    const std::size_t nc = gemm_min(nc_max, j1 - jc);
    for (std::size_t pc = 0; pc < k; pc += gemm_kc) {
      const std::size_t kc = gemm_min(gemm_kc, k - pc);
      const bool per_panel = InPlace && gemm_per_panel(m, kc);
      const TB* block;
      if constexpr (InPlace) {
        if (!per_panel) pack_w_block(kc, nc, w + jc * ldw + pc, ldw, scale + jc, bp);
        block = bp;
      } else {
        block = w + pc * n_padded + jc * kc;
      }
      const bool first = pc == 0;  // the first k block applies beta and bias, later ones add to C
      const std::size_t mc_step = per_panel ? m : gemm_mc;
      for (std::size_t ic = 0; ic < m; ic += mc_step) {
        const std::size_t mc = gemm_min(mc_step, m - ic);
        const float* ai = a + ic * lda + pc;
        float* ci = c + ic * ldc + jc;
        std::size_t jr0 = 0;
        if constexpr (!InPlace) {
          if (mc == 1)
            jr0 = row_gemv(kc, block, nc, ai, ci,
                           GemmEpilogue{o.alpha, first ? o.beta : 1.0f,
                                        first && o.bias ? o.bias + jc : nullptr, scale + jc},
                           o.k_blocks);
        }
        for (std::size_t jr = jr0; jr < nc; jr += gemm_nr) {
          const std::size_t nr = gemm_min(gemm_nr, nc - jr);
          if (per_panel) pack_w_panel(kc, nr, w + (jc + jr) * ldw + pc, ldw, scale + jc + jr, bp);
          const TB* panel = per_panel ? block : block + jr * kc;
          // Float panels are already dequantized: their tiles take no scales.
          const bool dequantize = dequantizes_panels<InPlace> && bp && mc > gemm_mr;
          const GemmEpilogue e{o.alpha, first ? o.beta : 1.0f,
                               first && o.bias ? o.bias + jc + jr : nullptr,
                               InPlace || dequantize ? nullptr : scale + jc + jr};
          if constexpr (dequantizes_panels<InPlace>) {
            if (dequantize) {
              dequantize_panel(kc, panel, scale + jc + jr, bp);
              panel_rows(kc, ai, lda, static_cast<const float*>(bp), ci + jr, ldc, mc, nr, e, o.k_blocks);
              continue;
            }
          }
          panel_rows(kc, ai, lda, panel, ci + jr, ldc, mc, nr, e, o.k_blocks);
        }
      }
    }
  }
}

}  // namespace

Status gemm_w8a32(std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda,
                  const std::int8_t* w, std::size_t ldw, const float* scale, float* c,
                  std::size_t ldc, ArenaRef& scratch, const GemmOptions& o) noexcept {
  if (m == 0 || n == 0) return Status::ok;
  if (!c || (k != 0 && (!a || !w || !scale))) return Status::null_pointer;
  EMHA_ASSERT(lda >= k && ldw >= k && ldc >= n);
  if (k == 0) {
    gemm_no_k(m, n, c, ldc, o);
    return Status::ok;
  }
  ArenaScope scope(scratch);
  // As gemm_w8a32_scratch_bytes (gemm_f32's): one panel, or one block (the first k block is the
  // largest).
  const std::size_t kc = gemm_min(k, gemm_kc);
  const std::size_t cols = gemm_per_panel(m, kc)
                               ? gemm_nr : gemm_round_up(gemm_min(n, gemm_nc(kc)), gemm_nr);
  float* bp = nullptr;
  const Status s = scratch.allocate(cols * kc, bp, 64);
  if (s != Status::ok) return s;
  w8_blocked<true>(m, 0, 0, n, k, a, lda, w, ldw, scale, c, ldc, bp, o);
  return Status::ok;
}

Status gemm_w8a32_pack_b(std::size_t n, std::size_t k, const std::int8_t* w, std::size_t ldw,
                         const float* scale, std::int8_t* packed, std::size_t packed_bytes) noexcept {
  if (n == 0) return Status::ok;
  if (!packed || !scale || (k != 0 && !w)) return Status::null_pointer;
  if (!float_aligned(packed)) return Status::misaligned;
  EMHA_ASSERT(ldw >= k);
  const PackedSizes s = packed_sizes(n);
  if (packed_bytes < s.scale_bytes || (k != 0 && !packed_fits(n, k, packed_bytes)))
    return Status::size_mismatch;
  std::memcpy(packed, scale, n * sizeof(float));
  std::memset(packed + n * sizeof(float), 0, s.scale_bytes - n * sizeof(float));
  std::int8_t* panels = packed + s.scale_bytes;
  for (std::size_t pc = 0; pc < k; pc += gemm_kc) {
    const std::size_t kc = gemm_min(gemm_kc, k - pc);
    pack_w_block(kc, n, w + pc, ldw, scale, panels + pc * s.n_padded);
  }
  return Status::ok;
}

namespace {
// gemm_w8a32_prepacked_columns, with or without scratch for the dequantized panels: inlined into
// both, so that neither adds a frame (Cortex-M stack).
[[gnu::always_inline]] inline Status prepacked_columns(std::size_t m, std::size_t n, std::size_t j0, std::size_t j1,
                                                       std::size_t k, const float* a, std::size_t lda,
                                                       const std::int8_t* packed, std::size_t packed_bytes, float* c,
                                                       std::size_t ldc, const GemmOptions& o, ArenaRef* scratch) noexcept {
  EMHA_ASSERT(j0 % gemm_max_nr == 0 && j0 <= j1 && j1 <= n);
  if (m == 0 || j0 == j1) return Status::ok;
  if (!c || (k != 0 && (!a || !packed))) return Status::null_pointer;
  if (k != 0 && !float_aligned(packed)) return Status::misaligned;
  if (k != 0 && !packed_fits(n, k, packed_bytes)) return Status::size_mismatch;
  EMHA_ASSERT(lda >= k && ldc >= n);
  if (k == 0) {
    gemm_no_k(m, j1 - j0, c + j0, ldc, GemmOptions{o.alpha, o.beta, o.bias ? o.bias + j0 : nullptr});
    return Status::ok;
  }
  const PackedSizes s = packed_sizes(n);
  // The scales were stored as floats at the start of the (float-aligned) buffer.
  const float* scale = reinterpret_cast<const float*>(packed);
  // A panel's dequantized floats, where the rows are more than one tile and the arena has room
  // (else the tiles dequantize as they load: the same bits either way).
  float* fp = nullptr;
  const ArenaRef::Mark mark = scratch ? scratch->mark() : 0;
  if (scratch && m > gemm_mr && scratch->allocate(gemm_nr * gemm_min(k, gemm_kc), fp, 64) != Status::ok)
    fp = nullptr;
  w8_blocked<false>(m, s.n_padded, j0, j1, k, a, lda, packed + s.scale_bytes, 0, scale, c, ldc, fp, o);
  if (scratch) scratch->release(mark);
  return Status::ok;
}
}  // namespace

Status gemm_w8a32_prepacked_columns(std::size_t m, std::size_t n, std::size_t j0, std::size_t j1,
                                    std::size_t k, const float* a, std::size_t lda,
                                    const std::int8_t* packed, std::size_t packed_bytes, float* c,
                                    std::size_t ldc, const GemmOptions& o) noexcept {
  return prepacked_columns(m, n, j0, j1, k, a, lda, packed, packed_bytes, c, ldc, o, nullptr);
}

Status gemm_w8a32_prepacked_columns(std::size_t m, std::size_t n, std::size_t j0, std::size_t j1,
                                    std::size_t k, const float* a, std::size_t lda,
                                    const std::int8_t* packed, std::size_t packed_bytes, float* c,
                                    std::size_t ldc, const GemmOptions& o, ArenaRef& scratch) noexcept {
  // Where panels are not dequantized, the call without scratch: one caller of the loops keeps
  // them inlined there (Cortex-M stack).
  if constexpr (!gemm_w8_dequantizes_panels)
    return gemm_w8a32_prepacked_columns(m, n, j0, j1, k, a, lda, packed, packed_bytes, c, ldc, o);
  else
    return prepacked_columns(m, n, j0, j1, k, a, lda, packed, packed_bytes, c, ldc, o, &scratch);
}

Status gemm_w8a32_prepacked(std::size_t m, std::size_t n, std::size_t k, const float* a,
                            std::size_t lda, const std::int8_t* packed, std::size_t packed_bytes,
                            float* c, std::size_t ldc, const GemmOptions& o) noexcept {
  return gemm_w8a32_prepacked_columns(m, n, 0, n, k, a, lda, packed, packed_bytes, c, ldc, o);
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

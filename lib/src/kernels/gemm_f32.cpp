// SPDX-License-Identifier: Apache-2.0
// Cache-blocked GEMM driver (the BLIS loop order) over the micro-kernel in gemm_ukernel.hpp.
// Loops: columns of C by NC, k by KC (pack that block of B into NR-column panels in the caller's
// arena, or take it pre-packed; with a single row block, pack each panel on its first use: just
// before its tiles, or by its first tile as it runs), rows by MC, then one NR-column panel at a
// time by the path panel_path() chooses (tiles, packing tile, narrow, k blocks; gemm_target.hpp
// says which a target has). A is read in place.

#include "emha/config.hpp"
#include "emha/kernels/gemm.hpp"
#include "gemm_ukernel.hpp"
#include "kernels/gemm_driver.hpp"
#include "gemm_ukernel_compact.hpp"
#include "isa_kernels.hpp"
#include "kernels/gemm_columns.hpp"
#include "kernels/gemm_gemv.hpp"
#include "gemm_ukernel_neon64.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {
namespace {


// A whole panel of op(B) = B (NR columns, kc rows ldb apart) -> bp[kc][NR]: a row of vectors per
// k; aarch64 declares its own overload (gemm_ukernel_neon64.hpp).
template <class Arch>
void pack_panel_full(Arch, std::size_t kc, const float* b, std::size_t ldb, float* bp) noexcept {
  for (std::size_t p = 0; p < kc; ++p, b += ldb, bp += gemm_nr)
    for (std::size_t q = 0; q < gemm_nr; q += simd::lanes) simd::store(bp + q, simd::load(b + q));
}

// One panel of op(B) = B: `cols` <= NR columns starting at b, kc rows ldb apart -> bp[kc][NR],
// columns past `cols` zero-filled.
void pack_panel_n(std::size_t kc, std::size_t cols, const float* b, std::size_t ldb,
                  float* bp) noexcept {
  if (cols == gemm_nr) return detail::pack_panel_full(simd::arch{}, kc, b, ldb, bp);
  for (std::size_t p = 0; p < kc; ++p, b += ldb, bp += gemm_nr) {
    for (std::size_t q = 0; q < cols; ++q) bp[q] = b[q];
    for (std::size_t q = cols; q < gemm_nr; ++q) bp[q] = 0.0f;
  }
}

// One panel of op(B) = B^T: its `cols` columns are rows of B (kc contiguous floats each, ldb
// apart) -> bp[kc][NR], through T x T block transposes (T = simd::transpose_block), then the
// column and k tails. k blocks outer: the NR / T transposes of a k block fill whole rows of bp
// one after another (+0-2.5% over column blocks outer, nt 128x768x256 to 256x1536x512).
void pack_panel_t(std::size_t kc, std::size_t cols, const float* b, std::size_t ldb,
                  float* bp) noexcept {
  constexpr std::size_t T = simd::transpose_block;
  const std::size_t cols_t = cols / T * T, kc_t = kc / T * T;
  for (std::size_t p = 0; p < kc_t; p += T)
    for (std::size_t q = 0; q < cols_t; q += T)
      simd::transpose_block_f32(b + q * ldb + p, ldb, bp + p * gemm_nr + q, gemm_nr);
  for (std::size_t q = 0; q < cols; ++q)
    for (std::size_t p = q < cols_t ? kc_t : 0; p < kc; ++p) bp[p * gemm_nr + q] = b[q * ldb + p];
  for (std::size_t q = cols; q < gemm_nr; ++q)
    for (std::size_t p = 0; p < kc; ++p) bp[p * gemm_nr + q] = 0.0f;
}

// Address of op(B)[p][j]: B[p][j] (Trans::none) or B[j][p] (Trans::transpose), rows ldb apart.
const float* op_b_at(const float* b, std::size_t ldb, Trans trans, std::size_t p,
                     std::size_t j) noexcept {
  return trans == Trans::none ? b + p * ldb + j : b + j * ldb + p;
}

// op(B)[p][j], p < kc, j < nc  ->  bp[panel][p][NR], one NR-column panel after another.
void pack_b(std::size_t kc, std::size_t nc, const float* b, std::size_t ldb, Trans trans,
            float* bp) noexcept {
  for (std::size_t j = 0; j < nc; j += gemm_nr, bp += kc * gemm_nr) {
    const std::size_t cols = gemm_min(gemm_nr, nc - j);
    const float* panel = op_b_at(b, ldb, trans, 0, j);
    if (trans == Trans::none)
      pack_panel_n(kc, cols, panel, ldb, bp);
    else
      pack_panel_t(kc, cols, panel, ldb, bp);
  }
}

// Whether `floats` hold the panels of op(B) [k x n] (k > 0) in this build's panel width: k rows of
// n rounded up to NR (gemm_f32_packed_b_floats, for every build's NR, is at least that).
bool packed_b_fits(std::size_t n, std::size_t k, std::size_t floats) noexcept {
  return floats / k >= gemm_round_up(n, gemm_nr);
}

// The mc rows of a narrow panel (nr <= gemm_narrow_nr columns, gemm_target.hpp), its rows ld
// apart: B's own rows read in place (ld = ldb), or its packed panel (ld = gemm_nr). One tile
// for both: a narrow tile reading a packed panel only strides over the half it does not use.
[[gnu::noinline]] void gemm_panel_narrow(std::size_t kc, const float* a, std::size_t lda,
                                         const float* b, std::size_t ld, float* c, std::size_t ldc,
                                         std::size_t mc, std::size_t nr,
                                         const detail::GemmEpilogue& e) noexcept {
  if constexpr (gemm_target.narrow) {
    // (Compiled on every target: a discarded branch of a function that is not a template.)
    constexpr std::size_t MR = gemm_target.narrow ? gemm_target.narrow_mr : 1;
    row_tiles<MR>(0, mc, [&](std::size_t i, std::size_t rows) __attribute__((always_inline)) {
      detail::gemm_ukernel_rows<MR, 1, detail::BRead::in_place>(kc, a + i * lda, lda, b, ld,
                                                                c + i * ldc, ldc, rows, nr, e);
    });
  }
}

// How a panel of C's columns is computed: panel_path() chooses, gemm_blocked calls that path's
// function (the tiles path: row_tiles over gemm_ukernel).
enum class PanelPath : unsigned char {
  tiles,            // gemm_mr-row tiles over the packed panel
  packing_tile,     // the first tile packs the panel as it runs, the others read it
  narrow,           // gemm_target.narrow: narrow tiles over the packed panel
  narrow_in_place,  // narrow tiles over a small B's own rows, nothing packed
  blocked,          // GemmOptions::k_blocks
};

[[gnu::always_inline]] inline PanelPath panel_path(bool per_panel, Trans trans_b, std::size_t kc,
                                                   std::size_t ldb, std::size_t mc, std::size_t nr,
                                                   const GemmOptions& o) noexcept {
  if (o.k_blocks) return PanelPath::blocked;  // (the other tiles sum one chain)
  const bool whole_b_rows = per_panel && trans_b == Trans::none;
  if (gemm_target.narrow && nr <= gemm_narrow_nr) {
    const bool small = whole_b_rows && nr == gemm_narrow_nr &&
                       kc * ldb <= gemm_target.in_place_max_floats;
    return small ? PanelPath::narrow_in_place : PanelPath::narrow;
  }
  // A single row block, a whole panel of B (not B^T) and a whole first tile. (From the block
  // loop's packed B, whose rows come from L3, a packing tile cost more than it saved.)
  if (gemm_target.packs_in_tile && whole_b_rows && nr == gemm_nr &&
      mc - row_tail<gemm_mr>(mc) >= gemm_mr)
    return PanelPath::packing_tile;
  return PanelPath::tiles;
}

// One row of C (a decode step's projection) over prepacked panels: whole groups of
// gemm_target.gemv_panels panels through gemm_gemv.hpp. Returns the columns done (a multiple of
// their width); the rest go to the tiles.
[[gnu::always_inline]] inline std::size_t gemm_row_gemv(std::size_t kc, const float* bp, std::size_t jc,
                                                        std::size_t nc, const float* a, float* c,
                                                        bool first, const GemmOptions& o) noexcept {
  std::size_t jr = 0;
  if constexpr (gemm_target.gemv_panels != 0) {
    constexpr std::size_t P = gemm_target.gemv_panels;
    for (; jr + P * gemm_nr <= nc; jr += P * gemm_nr) {
      const detail::GemmEpilogue e{o.alpha, first ? o.beta : 1.0f,
                                   first && o.bias ? o.bias + jc + jr : nullptr};
      if (o.k_blocks)
        detail::gemm_gemv_f32<true>(kc, a, bp + jr * kc, gemm_nr * kc, c + jr, e);
      else
        detail::gemm_gemv_f32<false>(kc, a, bp + jr * kc, gemm_nr * kc, c + jr, e);
    }
  }
  return jr;
}

// The blocked loops over packed panels, for columns [j0, j1) of C (j0 a multiple of NR; the
// whole product: 0, n). B comes packed per call into `bp_scratch`, or, when `prepacked` is set,
// from gemm_f32_pack_b's layout: k block pc at prepacked + pc * n_padded, its panel for column j
// at + j * kc.
void gemm_blocked(std::size_t m, std::size_t n, std::size_t j0, std::size_t j1, std::size_t k,
                  const float* a, std::size_t lda,
                  const float* b, std::size_t ldb, Trans trans_b, const float* prepacked,
                  float* c, std::size_t ldc, float* bp_scratch,
                  const GemmOptions& o) noexcept {
  const std::size_t n_padded = gemm_round_up(n, gemm_nr);
  const std::size_t nc_max = gemm_nc(gemm_min(k, gemm_kc));
  for (std::size_t jc = j0; jc < j1; jc += nc_max) {
    const std::size_t nc = gemm_min(nc_max, j1 - jc);
    for (std::size_t pc = 0; pc < k; pc += gemm_kc) {
      const std::size_t kc = gemm_min(gemm_kc, k - pc);
      const float* bp = prepacked ? prepacked + pc * n_padded + jc * kc : bp_scratch;
      const float* bsrc = prepacked ? nullptr : op_b_at(b, ldb, trans_b, pc, jc);
      // A small enough to stay in L2 whole (all m rows at once): each B panel is packed right
      // before its tiles into the same kc x NR buffer, which stays in L1 (+2-3% over packing
      // the block first, 64x384x128 and 128x768x256). Otherwise rows go by MC, and the kc x nc
      // block is packed once for all of them.
      const bool per_panel = !prepacked && gemm_per_panel(m, kc);
      if (!prepacked && !per_panel) pack_b(kc, nc, bsrc, ldb, trans_b, bp_scratch);
      // The first k block applies beta and bias; later blocks accumulate onto C.
      const bool first = pc == 0;
      const std::size_t mc_step = per_panel ? m : gemm_mc;
      for (std::size_t ic = 0; ic < m; ic += mc_step) {
        const std::size_t mc = gemm_min(mc_step, m - ic);
        std::size_t jr0 = 0;  // a GEMV: one row of C over whole groups of prepacked panels
        if (gemm_target.gemv_panels != 0 && prepacked && mc == 1)
          jr0 = gemm_row_gemv(kc, bp, jc, nc, a + ic * lda + pc, c + ic * ldc + jc, first, o);
        for (std::size_t jr = jr0; jr < nc; jr += gemm_nr) {
          const std::size_t nr = gemm_min(gemm_nr, nc - jr);
          const PanelPath path = panel_path(per_panel, trans_b, kc, ldb, mc, nr, o);
          const float* unpacked = per_panel ? op_b_at(bsrc, ldb, trans_b, 0, jr) : nullptr;
          if (per_panel && path != PanelPath::narrow_in_place && path != PanelPath::packing_tile)
            pack_b(kc, nr, unpacked, ldb, trans_b, bp_scratch);
          const float* panel = path == PanelPath::narrow_in_place ? unpacked
                               : per_panel                        ? bp_scratch
                                                                  : bp + jr * kc;
          const detail::GemmEpilogue e{o.alpha, first ? o.beta : 1.0f,
                                       first && o.bias ? o.bias + jc + jr : nullptr};
          switch (path) {  // the tiles path (and the packing tile's other rows) below
            case PanelPath::blocked:
              panel_blocked(kc, a + ic * lda + pc, lda, panel, c + ic * ldc + jc + jr, ldc, mc, nr, e);
              continue;
            case PanelPath::narrow:
            case PanelPath::narrow_in_place:
              gemm_panel_narrow(kc, a + ic * lda + pc, lda, panel,
                                path == PanelPath::narrow_in_place ? ldb : gemm_nr,
                                c + ic * ldc + jc + jr, ldc, mc, nr, e);
              continue;
            case PanelPath::packing_tile:
              detail::gemm_ukernel_packing(kc, a + ic * lda + pc, lda, unpacked, ldb, bp_scratch,
                                           c + ic * ldc + jc + jr, ldc, e);
              break;
            case PanelPath::tiles:
              break;
          }
          row_tiles<gemm_mr>(path == PanelPath::packing_tile ? gemm_mr : 0, mc,
                             [&](std::size_t i, std::size_t rows) __attribute__((always_inline)) {
            const float* ai = a + (ic + i) * lda + pc;
            float* ci = c + (ic + i) * ldc + jc + jr;
            if constexpr (simd::optimize_size)
              detail::gemm_ukernel_compact(kc, ai, lda, panel, ci, ldc, rows, nr, e);
            else
              detail::gemm_ukernel(simd::arch{}, kc, ai, lda, panel, ci, ldc, rows, nr, e);
          });
        }
      }
    }
  }
}

}  // namespace

Status gemm_f32(std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda,
                const float* b, std::size_t ldb, Trans trans_b, float* c, std::size_t ldc,
                ArenaRef& scratch, const GemmOptions& o) noexcept {
  if (m == 0 || n == 0) return Status::ok;
  if (!c || (k != 0 && (!a || !b))) return Status::null_pointer;
  EMHA_ASSERT(trans_b == Trans::none || trans_b == Trans::transpose);
  EMHA_ASSERT(lda >= k && ldc >= n && ldb >= (trans_b == Trans::none ? n : k));
  if (k == 0) {
    gemm_no_k(m, n, c, ldc, o);
    return Status::ok;
  }
  // The whole product one narrow panel of B read in place (a 16-wide head's P V on AVX-512, a
  // 16^3 product): its tiles directly, no scratch and no block loops, whose set-up cost a 16^3
  // product about a quarter of its time (bench/README.md history). Same tiles, same bits as the loops.
  if (k <= gemm_kc && n <= gemm_nr &&
      panel_path(gemm_per_panel(m, k), trans_b, k, ldb, m, n, o) == PanelPath::narrow_in_place) {
    gemm_panel_narrow(k, a, lda, b, ldb, c, ldc, m, n, detail::GemmEpilogue{o.alpha, o.beta, o.bias});
    return Status::ok;
  }
  ArenaScope scope(scratch);
  float* bp = nullptr;
  // As gemm_f32_scratch_bytes: one panel, or one block (the first k block is the largest).
  const std::size_t kc = gemm_min(k, gemm_kc);
  const std::size_t cols = gemm_per_panel(m, kc)
                               ? gemm_nr : gemm_round_up(gemm_min(n, gemm_nc(kc)), gemm_nr);
  const Status s = scratch.allocate(cols * kc, bp, 64);
  if (s != Status::ok) return s;
  gemm_blocked(m, n, 0, n, k, a, lda, b, ldb, trans_b, nullptr, c, ldc, bp, o);
  return Status::ok;
}

Status gemm_f32_pack_b(std::size_t n, std::size_t k, const float* b, std::size_t ldb, Trans trans_b,
                       float* packed, std::size_t packed_floats) noexcept {
  if (n == 0 || k == 0) return Status::ok;
  if (!b || !packed) return Status::null_pointer;
  EMHA_ASSERT(trans_b == Trans::none || trans_b == Trans::transpose);
  EMHA_ASSERT(ldb >= (trans_b == Trans::none ? n : k));
  const std::size_t n_padded = gemm_round_up(n, gemm_nr);
  if (!packed_b_fits(n, k, packed_floats)) return Status::size_mismatch;
  for (std::size_t pc = 0; pc < k; pc += gemm_kc) {
    const std::size_t kc = gemm_min(gemm_kc, k - pc);
    pack_b(kc, n, op_b_at(b, ldb, trans_b, pc, 0), ldb, trans_b, packed + pc * n_padded);
  }
  return Status::ok;
}

Status gemm_f32_prepacked_columns(std::size_t m, std::size_t n, std::size_t j0, std::size_t j1,
                                  std::size_t k, const float* a, std::size_t lda,
                                  const float* packed_b, std::size_t packed_floats, float* c,
                                  std::size_t ldc, const GemmOptions& o) noexcept {
  EMHA_ASSERT(j0 % gemm_max_nr == 0 && j0 <= j1 && j1 <= n);
  if (m == 0 || j0 == j1) return Status::ok;
  if (!c || (k != 0 && (!a || !packed_b))) return Status::null_pointer;
  if (k != 0 && !packed_b_fits(n, k, packed_floats)) return Status::size_mismatch;
  EMHA_ASSERT(lda >= k && ldc >= n);
  if (k == 0) {
    gemm_no_k(m, j1 - j0, c + j0, ldc, GemmOptions{o.alpha, o.beta, o.bias ? o.bias + j0 : nullptr});
    return Status::ok;
  }
  gemm_blocked(m, n, j0, j1, k, a, lda, nullptr, 0, Trans::none, packed_b, c, ldc, nullptr, o);
  return Status::ok;
}

Status gemm_f32_prepacked(std::size_t m, std::size_t n, std::size_t k, const float* a,
                          std::size_t lda, const float* packed_b, std::size_t packed_floats,
                          float* c, std::size_t ldc, const GemmOptions& o) noexcept {
  return gemm_f32_prepacked_columns(m, n, 0, n, k, a, lda, packed_b, packed_floats, c, ldc, o);
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

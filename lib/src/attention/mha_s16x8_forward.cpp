// SPDX-License-Identifier: Apache-2.0
// The 16x8 layer's pass (emha/attention/mha_s16x8.hpp), one sequence at a time, shaped as the s8
// pass (mha_s8_forward.cpp) without its zero points:
//   1. Q [S_q x q_dim], K [S_kv x kv_dim] and V^T [kv_dim x S_kv] projected (gemm_s16x8, int64
//      sums, requantize_s16 with the bias and a multiplier per channel).
//   2. Per block of mha_s16x8_rows query rows and head (their products one gemm_s16 each), per
//      row: its Q K^T sums over the keys the causal mask leaves, requantized to int16 scores; the
//      unmasked ones (packed when other masks are given) put through TFLite's int16 softmax, the
//      masked ones 0; then P V over every key (a masked key weighs 0) into the context row.
//   3. out = FULLY_CONNECTED(context), written in the caller's layout.
// forward_reference() runs the kernels' references. The masks are read as the s8 pass reads them
// (integer_pass.hpp).

#include <cstdint>

#include "attention/integer_pass.hpp"
#include "attention/mha_s8_validate.hpp"
#include "attention/return_on_error.hpp"
#include "emha/kernels/gemm_s16.hpp"
#include "emha/kernels/gemm_s16_ref.hpp"
#include "emha/kernels/requantize_s16.hpp"
#include "emha/kernels/requantize_s16_ref.hpp"
#include "emha/kernels/softmax_s16.hpp"

namespace emha::detail {
namespace {

template <bool Reference, class B>
void gemm(std::size_t m, std::size_t n, std::size_t k, const std::int16_t* a, std::size_t lda, const B* b,
          std::size_t ldb, std::int64_t* c, std::size_t ldc) noexcept {
  if constexpr (sizeof(B) == 1)
    Reference ? gemm_s16x8_ref(m, n, k, a, lda, b, ldb, c, ldc) : emha::gemm_s16x8(m, n, k, a, lda, b, ldb, c, ldc);
  else
    Reference ? gemm_s16_ref(m, n, k, a, lda, b, ldb, c, ldc) : emha::gemm_s16(m, n, k, a, lda, b, ldb, c, ldc);
}

template <bool Reference>
void requant(std::size_t n, const std::int64_t* acc, const std::int64_t* bias, const QuantizedMultiplier* q,
             std::size_t q_step, std::int16_t* y, std::size_t ldy) noexcept {
  Reference ? requantize_s16_ref(n, acc, bias, q, q_step, y, ldy) : emha::requantize_s16(n, acc, bias, q, q_step, y, ldy);
}

// y[i * y_row + j * y_col] = FULLY_CONNECTED(x row i)[j], for m rows of `in` into p's rows,
// mha_s16x8_rows rows per gemm_s16x8 (sums holds that many rows of sums).
template <bool Reference>
void project(std::size_t m, std::size_t in, Rows<const std::int16_t> x, const ProjectionS16x8& p, std::size_t rows,
             std::int64_t* sums, std::int16_t* y, std::size_t y_row, std::size_t y_col) noexcept {
  for (std::size_t i = 0; i < m; i += mha_s16x8_rows) {
    const std::size_t block = m - i < mha_s16x8_rows ? m - i : mha_s16x8_rows;
    gemm<Reference>(block, rows, in, x.p + i * x.ld, x.ld, p.weight.data, in, sums, rows);
    for (std::size_t r = 0; r < block; ++r)
      requant<Reference>(rows, sums + r * rows, p.bias.data, p.multiplier.data, 1, y + (i + r) * y_row, y_col);
  }
}

// The arena's buffers (MhaS16x8Arena).
struct Buffers {
  std::int16_t *q, *k, *vt, *context;
  std::int64_t* sums;
  std::int8_t* keep;             // one query row's keep flags [S_kv]
  std::int16_t *scores, *probs;  // one query row's [S_kv] each
  std::int16_t* p;               // mha_s16x8_rows rows of probabilities [S_kv each]
};

Status allocate(const MhaDims& d, ArenaRef& arena, Buffers& b) noexcept {
  const MhaS16x8Arena a = mha_s16x8_arena(d);
  const std::size_t skv = d.max_seq_kv;
  std::int16_t* row = nullptr;
  const Status s[] = {arena.allocate(a.q / 2, b.q, 64),           arena.allocate(a.k / 2, b.k, 64),
                      arena.allocate(a.vt / 2, b.vt, 64),         arena.allocate(a.context / 2, b.context, 64),
                      arena.allocate(a.sums / 8, b.sums, 64),     arena.allocate(a.keep, b.keep, 64),
                      arena.allocate(a.row / 2, row, 64)};
  for (Status e : s)
    if (e != Status::ok) return e;
  b.scores = row;
  b.probs = row + skv;
  b.p = row + 2 * skv;
  return Status::ok;
}

// Step 2 for query rows i0 .. i0 + rows - 1 of head h (K/V head g), rows <= mha_s16x8_rows: their
// context rows, and their probabilities to p_out (rows of S_kv, null when not asked).
template <Rounding R, bool Reference>
void attend_rows(const MhaDims& d, const MhaS16x8Weights& w, const AttentionShape& sh, const AttentionMasks& m,
                 const Buffers& buf, std::size_t b, std::size_t h, std::size_t i0, std::size_t rows,
                 std::int16_t* p_out) noexcept {
  const std::size_t dk = d.d_k(), skv = sh.seq_kv, g = h / d.group(), kv = d.kv_dim(), q_dim = d.q_dim();
  const std::size_t reach = keys_used(m, skv, i0 + rows - 1);  // the most keys of any of the rows
  gemm<Reference>(rows, reach, dk, buf.q + i0 * q_dim + h * dk, q_dim, buf.k + g * dk, kv, buf.sums, reach);
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t i = i0 + r, used = keys_used(m, skv, i);
    std::int16_t* row = buf.p + r * skv;
    requant<Reference>(used, buf.sums + r * reach, nullptr, &w.scores, 0, buf.scores, 1);
    row_probabilities(d, sh, m, b, h, i, used, buf.scores, buf.probs, buf.keep, std::int16_t(0), row,
                      p_out ? p_out + r * skv : nullptr, [&](std::size_t n, const std::int16_t* x, std::int16_t* y) {
                        softmax_s16<R>(1, n, x, n, w.softmax, y, n);
                      });
  }
  gemm<Reference>(rows, dk, skv, buf.p, skv, buf.vt + g * dk * skv, skv, buf.sums, dk);
  for (std::size_t r = 0; r < rows; ++r)
    requant<Reference>(dk, buf.sums + r * dk, nullptr, &w.context, 0, buf.context + (i0 + r) * q_dim + h * dk, 1);
}

}  // namespace

template <Rounding R, bool Reference>
Status mha_s16x8_forward(const MhaDims& d, const MhaS16x8Weights& w, ArenaRef& arena, const AttentionShape& sh,
                         Span<const std::int16_t> query, Span<const std::int16_t> key,
                         Span<const std::int16_t> value, Span<std::int16_t> out,
                         const ForwardOptionsS16x8& o) noexcept {
  EMHA_TRY(mha_s16x8_check_call(d, w, arena, sh, query, key, value, out, o));
  ArenaScope scope(arena);
  Buffers buf{};
  EMHA_TRY(allocate(d, arena, buf));
  const std::size_t sq = sh.seq_q, skv = sh.seq_kv, kv = d.kv_dim();
  for (std::size_t b = 0; b < sh.batch; ++b) {
    project<Reference>(sq, d.d_model, rows_of(query.data, sh, b, sq, d.d_model), w.q, d.q_dim(), buf.sums, buf.q,
                       d.q_dim(), 1);
    project<Reference>(skv, d.kdim, rows_of(key.data, sh, b, skv, d.kdim), w.k, kv, buf.sums, buf.k, kv, 1);
    project<Reference>(skv, d.vdim, rows_of(value.data, sh, b, skv, d.vdim), w.v, kv, buf.sums, buf.vt, 1, skv);
    for (std::size_t h = 0; h < d.heads; ++h)
      for (std::size_t i = 0; i < sq; i += mha_s16x8_rows) {
        const std::size_t rows = sq - i < mha_s16x8_rows ? sq - i : mha_s16x8_rows;
        std::int16_t* p = o.attn_weights.data ? o.attn_weights.data + ((b * d.heads + h) * sq + i) * skv : nullptr;
        attend_rows<R, Reference>(d, w, sh, o.masks, buf, b, h, i, rows, p);
      }
    const Rows<std::int16_t> y = rows_of(out.data, sh, b, sq, d.d_model);
    project<Reference>(sq, d.q_dim(), Rows<const std::int16_t>{buf.context, d.q_dim()}, w.out, d.d_model, buf.sums,
                       y.p, y.ld, 1);
  }
  return Status::ok;
}

#define EMHA_S16X8_FORWARD(R, Ref)                                                                             \
  template Status mha_s16x8_forward<R, Ref>(const MhaDims&, const MhaS16x8Weights&, ArenaRef&,                \
                                            const AttentionShape&, Span<const std::int16_t>,                   \
                                            Span<const std::int16_t>, Span<const std::int16_t>,                \
                                            Span<std::int16_t>, const ForwardOptionsS16x8&) noexcept;
EMHA_S16X8_FORWARD(Rounding::double_rounding, false)
EMHA_S16X8_FORWARD(Rounding::double_rounding, true)
EMHA_S16X8_FORWARD(Rounding::single_rounding, false)
EMHA_S16X8_FORWARD(Rounding::single_rounding, true)
#undef EMHA_S16X8_FORWARD

}  // namespace emha::detail

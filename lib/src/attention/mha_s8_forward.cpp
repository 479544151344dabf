// SPDX-License-Identifier: Apache-2.0
// The full-integer layer's pass (emha/attention/mha_s8.hpp), one sequence at a time:
//   1. Q [S_q x q_dim], K [S_kv x kv_dim] and V^T [kv_dim x S_kv] projected (FULLY_CONNECTED,
//      mha_s8_project_rows rows a gemm_s8_staged);
//      K's row sums per head (times -z_Q, [kv_heads x S_kv]: a row's keys in a run) and V^T's row
//      sums over the keys' first 16, 32, ... (mha_s8_key_chunk), which carry the zero points
//      below (every row sum here, Q's and the probabilities' too, by row_sums_s8).
//   2. Per block of mha_s8_attend_rows query rows and head (their products one gemm_s8_staged
//      each: on the DSP variant the rows widened once into the arena's stage, buf.packed), per
//      row: its int32 Q K^T sums over the keys the causal mask leaves, requantized to int8
//      scores; the unmasked ones (packed when other masks are given) put through TFLite's softmax
//      (softmax_s8_row: the reference's bytes, its exps from the layer's table), the masked ones
//      -128; then P V into the context row, over the keys the block's last row reaches rounded
//      up to 16 (every key in forward_reference()): the keys past a row's own are masked, whose
//      probability -128 has the weight p + 128 = 0.
//   3. out = FULLY_CONNECTED(context), written in the caller's layout.
// forward_reference() runs the kernels' references (gemm_s8_ref, requantize_s8_ref, softmax_s8_ref).
// Compiled once, an instance per rounding and path (emha/detail/mha_s8_plan.hpp's mha_s8_general);
// forward() with double rounding reaches it through mha_s8_core.cpp, compiled per variant, which
// runs mha_s8_vnni.hpp's pass instead where that applies (the same bytes).
// Zero points leave the inner products: gemm_s8 sums raw int8 products and each zero point comes
// back through a row sum,
//   sum_d (q - z_Q)(k - z_K) = sum q k - z_K sum q - z_Q sum k + d_k z_Q z_K
//   sum_j (p + 128)(v - z_V) = sum p v + 128 sum v - z_V (sum p + 128 K)   (j < K keys),
// the int32 values TFLite's loops compute (combined modulo 2^32: the parts may overflow where the
// total does not).

#include <cstdint>

#include "attention/integer_pass.hpp"
#include "attention/mha_s8_general.hpp"
#include "emha/kernels/gemm_s8.hpp"
#include "emha/kernels/gemm_s8_ref.hpp"
#include "emha/kernels/requantize_s8.hpp"
#include "emha/kernels/requantize_s8_ref.hpp"
#include "emha/kernels/softmax_s8.hpp"
#include "emha/kernels/softmax_s8_ref.hpp"

namespace emha::detail {
namespace {

// sums[i] = row i's int8 summed (row_sums_s8), or its reference.
template <bool Reference>
void row_sums(std::size_t m, std::size_t k, const std::int8_t* a, std::size_t lda, std::int32_t* sums) noexcept {
  if constexpr (Reference)
    row_sums_s8_ref(m, k, a, lda, sums);
  else
    emha::row_sums_s8(m, k, a, lda, sums);
}

// gemm() with gemm_s8_staged's stage (buf.packed where the arena has one; the reference ignores it).
template <bool Reference>
void gemm_staged(std::size_t m, std::size_t n, std::size_t k, const std::int8_t* a, std::size_t lda,
                 const std::int8_t* b, std::size_t ldb, std::int32_t* c, std::size_t ldc,
                 const MhaS8Buffers& buf) noexcept {
  if constexpr (Reference)
    gemm_s8_ref(m, n, k, a, lda, b, ldb, c, ldc);
  else
    emha::gemm_s8_staged(m, n, k, a, lda, b, ldb, c, ldc, reinterpret_cast<std::int16_t*>(buf.packed),
                         buf.packed_bytes / 2);
}

// y[j * ldy] = requantize_s8(acc[j] + bias[j]) (emha/kernels/requantize_s8.hpp), or its reference.
template <Rounding R, bool Reference>
void requant(std::size_t n, const std::int32_t* acc, const std::int32_t* bias, const QuantizedMultiplier* q,
             std::size_t q_step, std::int32_t zero_point, std::int8_t* y, std::size_t ldy) noexcept {
  if constexpr (Reference)
    requantize_s8_ref(n, acc, bias, q, q_step, R, zero_point, y, ldy);
  else
    emha::requantize_s8(n, acc, bias, q, q_step, R, zero_point, y, ldy);
}

// TFLite's softmax of one row of n scores (in place allowed): the table's, its output pass
// vectorized over `exps` (n int32 of scratch), or the reference's.
template <Rounding R, bool Reference>
void softmax(std::size_t n, const std::int8_t* x, const MhaS8Weights& w, const SoftmaxS8Table& table,
             std::int8_t* y, std::int32_t* exps) noexcept {
  if constexpr (Reference)
    softmax_s8_ref<R>(1, n, x, n, w.softmax, y, n);
  else
    softmax_s8_row(n, x, table, y, exps);
}

// a + b + ... modulo 2^32 (no signed overflow where the total is in range).
constexpr std::int32_t wrap_sum(std::uint32_t a, std::uint32_t b, std::uint32_t c = 0, std::uint32_t d = 0) noexcept {
  return static_cast<std::int32_t>(a + b + c + d);
}

// Output channels a projection takes per sweep over its rows: the weights of as many as fit in
// project_bytes (at least 4, a multiple of 4: gemm_s8's blocks), read from the nearest cache for
// every block of rows rather than the whole matrix again per block.
inline constexpr std::size_t project_bytes = 16384;
constexpr std::size_t project_chunk(std::size_t in, std::size_t rows) noexcept {
  const std::size_t fit = in > 0 ? project_bytes / in / 4 * 4 : rows;
  return fit < 4 ? 4 : fit > rows ? rows : fit;
}

// y[i * y_row + j * y_col] = FULLY_CONNECTED(x row i)[j], for m rows of `in` int8 into p's rows,
// mha_s8_project_rows rows per gemm_s8_staged (buf.sums holds that many rows of sums).
template <Rounding R, bool Reference>
void project(std::size_t m, std::size_t in, Rows<const std::int8_t> x, const ProjectionS8& p, std::size_t rows,
             std::int32_t zero_point, const MhaS8Buffers& buf, std::int8_t* y, std::size_t y_row,
             std::size_t y_col) noexcept {
  std::int32_t* const sums = buf.sums;
  const std::size_t chunk = project_chunk(in, rows);
  for (std::size_t j = 0; j < rows; j += chunk) {
    const std::size_t cols = rows - j < chunk ? rows - j : chunk;
    const std::int8_t* wj = p.weight.data + j * in;
    const std::int32_t* bias = p.bias.data ? p.bias.data + j : nullptr;
    for (std::size_t i = 0; i < m; i += mha_s8_project_rows) {
      const std::size_t block = m - i < mha_s8_project_rows ? m - i : mha_s8_project_rows;
      gemm_staged<Reference>(block, cols, in, x.p + i * x.ld, x.ld, wj, in, sums, cols, buf);
      std::int8_t* yij = y + i * y_row + j * y_col;
      if constexpr (Reference)
        requantize_s8_channels_ref(block, cols, sums, cols, bias, p.multiplier.data + j, R, zero_point, yij, y_row,
                                   y_col);
      else
        emha::requantize_s8_channels(block, cols, sums, cols, bias, p.multiplier.data + j, R, zero_point, yij, y_row,
                                     y_col);
    }
  }
}


// Step 2 for query rows i0 .. i0 + rows - 1 of head h (K/V head g), rows <= mha_s8_attend_rows:
// their context rows, and their probabilities to p_out (rows of S_kv, null when not asked). The
// rows' Q K^T and P V are one gemm_s8 each, over the keys the last row reaches (a causal row
// ignores the few past its own).
template <Rounding R, bool Reference>
void attend_rows(const MhaDims& d, const MhaS8Weights& w, const SoftmaxS8Table& table, const AttentionShape& sh,
                 const AttentionMasks& m, const MhaS8Buffers& buf, std::size_t b, std::size_t h, std::size_t i0,
                 std::size_t rows, std::int8_t* p_out) noexcept {
  const std::size_t dk = d.d_k(), skv = sh.seq_kv, g = h / d.group(), kv = d.kv_dim(), q_dim = d.q_dim();
  const std::size_t reach = keys_used(m, skv, i0 + rows - 1);  // the most keys of any of the rows
  const std::int8_t* q = buf.q + i0 * q_dim + h * dk;             // the rows' Q, q_dim apart
  gemm_staged<Reference>(rows, reach, dk, q, q_dim, buf.k + g * dk, kv, buf.sums, reach, buf);
  const auto zq = std::uint32_t(w.zero_point_q), zk = std::uint32_t(w.zero_point_k);
  const std::int32_t* k_zq = buf.k_sums + g * skv;  // -z_Q sum_d k per key
  std::int32_t *const q_sums = buf.row_sums, *const p_sums = buf.row_sums + mha_s8_attend_rows;
  row_sums<Reference>(rows, dk, q, q_dim, q_sums);
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t i = i0 + r, used = keys_used(m, skv, i);
    std::int32_t* sums = buf.sums + r * reach;  // this row's Q K^T sums, then its softmax's scratch
    std::int8_t* row = buf.p + r * skv;
    const std::uint32_t zz = std::uint32_t(dk) * zq * zk - zk * std::uint32_t(q_sums[r]);
    for (std::size_t j = 0; j < used; ++j)
      sums[j] = wrap_sum(sums[j], zz, std::uint32_t(k_zq[j]));
    requant<R, Reference>(used, sums, nullptr, &w.scores, 0, w.zero_point_scores, buf.scores, 1);
    row_probabilities(d, sh, m, b, h, i, used, buf.scores, buf.probs, buf.keep, std::int8_t(INT8_MIN), row,
                      p_out ? p_out + r * skv : nullptr, [&](std::size_t n, const std::int8_t* x, std::int8_t* y) {
                        softmax<R, Reference>(n, x, w, table, y, sums);
                      });
  }
  // P V over the first `keys` keys: the reach rounded up to mha_s8_key_chunk (at most S_kv, at
  // least one chunk); the probabilities past the reach are -128, whose weight is 0. The reference
  // takes every key, so that the tests comparing the two check the shortcut.
  const std::size_t chunks = mha_s8_key_chunks(reach);
  const std::size_t keys = !Reference && chunks * mha_s8_key_chunk < skv ? chunks * mha_s8_key_chunk : skv;
  const std::int32_t* v_sums = buf.v_sums + (keys ? (keys - 1) / mha_s8_key_chunk : 0) * kv + g * dk;
  row_sums<Reference>(rows, keys, buf.p, skv, p_sums);
  gemm_staged<Reference>(rows, dk, keys, buf.p, skv, buf.vt + g * dk * skv, skv, buf.sums, dk, buf);
  const auto zv = std::uint32_t(w.zero_point_v);
  for (std::size_t r = 0; r < rows; ++r) {
    std::int32_t* sums = buf.sums + r * dk;
    const std::uint32_t weights = std::uint32_t(p_sums[r]) + 128u * std::uint32_t(keys);  // sum (p + 128)
    for (std::size_t c = 0; c < dk; ++c)
      sums[c] = wrap_sum(sums[c], 128u * std::uint32_t(v_sums[c]), 0u - zv * weights);
    requant<R, Reference>(dk, sums, nullptr, &w.context, 0, w.zero_point_context,
                          buf.context + (i0 + r) * q_dim + h * dk, 1);
  }
}

// One sequence's pass (b of the batch).
template <Rounding R, bool Reference>
void sequence(const MhaDims& d, const MhaS8Weights& w, const SoftmaxS8Table& table, const AttentionShape& sh,
              Span<const std::int8_t> query, Span<const std::int8_t> key, Span<const std::int8_t> value,
              Span<std::int8_t> out, const ForwardOptionsS8& o, const MhaS8Buffers& buf, std::size_t b) noexcept {
  const std::size_t sq = sh.seq_q, skv = sh.seq_kv, kv = d.kv_dim(), dk = d.d_k();
  project<R, Reference>(sq, d.d_model, rows_of(query.data, sh, b, sq, d.d_model), w.q, d.q_dim(), w.zero_point_q,
                        buf, buf.q, d.q_dim(), 1);
  project<R, Reference>(skv, d.kdim, rows_of(key.data, sh, b, skv, d.kdim), w.k, kv, w.zero_point_k, buf,
                        buf.k, kv, 1);
  project<R, Reference>(skv, d.vdim, rows_of(value.data, sh, b, skv, d.vdim), w.v, kv, w.zero_point_v, buf,
                        buf.vt, 1, skv);
  for (std::size_t g = 0; g < d.kv_heads; ++g)  // K's row sums per head (times -z_Q), V^T's row sums
    row_sums<Reference>(skv, dk, buf.k + g * dk, kv, buf.k_sums + g * skv);
  for (std::size_t j = 0; j < skv * d.kv_heads; ++j)
    buf.k_sums[j] = wrap_sum(0u, 0u - std::uint32_t(w.zero_point_q) * std::uint32_t(buf.k_sums[j]));
  // V^T's row sums over the first 16, 32, ... keys (the last prefix ends at S_kv)
  for (std::size_t j = 0; j < skv; j += mha_s8_key_chunk) {
    std::int32_t* v_sums = buf.v_sums + j / mha_s8_key_chunk * kv;
    row_sums<Reference>(kv, skv - j < mha_s8_key_chunk ? skv - j : mha_s8_key_chunk, buf.vt + j, skv, v_sums);
    if (j > 0)
      for (std::size_t c = 0; c < kv; ++c) v_sums[c] = wrap_sum(std::uint32_t(v_sums[c]), std::uint32_t(v_sums[c - kv]));
  }
  for (std::size_t h = 0; h < d.heads; ++h)
    for (std::size_t i = 0; i < sq; i += mha_s8_attend_rows) {
      const std::size_t rows = sq - i < mha_s8_attend_rows ? sq - i : mha_s8_attend_rows;
      std::int8_t* p = o.attn_weights.data ? o.attn_weights.data + ((b * d.heads + h) * sq + i) * skv : nullptr;
      attend_rows<R, Reference>(d, w, table, sh, o.masks, buf, b, h, i, rows, p);
    }
  const Rows<std::int8_t> y = rows_of(out.data, sh, b, sq, d.d_model);
  project<R, Reference>(sq, d.q_dim(), Rows<const std::int8_t>{buf.context, d.q_dim()}, w.out, d.d_model,
                        w.zero_point_out, buf, y.p, y.ld, 1);
}

}  // namespace

Status mha_s8_allocate(const MhaDims& d, ArenaRef& arena, MhaS8Buffers& b) noexcept {
  const MhaS8Arena a = mha_s8_arena(d);
  const std::size_t skv = d.max_seq_kv;
  std::int8_t* row = nullptr;
  const Status s[] = {arena.allocate(a.q, b.q, 64),           arena.allocate(a.k, b.k, 64),
                      arena.allocate(a.vt, b.vt, 64),         arena.allocate(a.context, b.context, 64),
                      arena.allocate(a.k_sums / 4, b.k_sums, 64), arena.allocate(a.v_sums / 4, b.v_sums, 64),
                      arena.allocate(a.sums / 4, b.sums, 64), arena.allocate(a.row_sums / 4, b.row_sums, 64),
                      arena.allocate(a.row, row, 64),         arena.allocate(a.packed, b.packed, 64)};
  for (Status e : s)
    if (e != Status::ok) return e;
  b.keep = row;
  b.scores = row + skv;
  b.probs = row + 2 * skv;
  b.p = row + 3 * skv;
  b.packed_bytes = a.packed;
  return Status::ok;
}

QuantizedMultiplier softmax_s8_inverse(std::int32_t sum) noexcept {
  int bits_over_unit = 0;
  const std::int32_t inverse = fixed_point::reciprocal<softmax_s8_sum_bits>(sum, bits_over_unit);
  return {inverse, -(bits_over_unit + 31 - 8)};
}

template <Rounding R, bool Reference>
Status mha_s8_general(const MhaDims& d, const MhaS8Weights& w, const SoftmaxS8Table& table, ArenaRef& arena,
                      const AttentionShape& sh, Span<const std::int8_t> query, Span<const std::int8_t> key,
                      Span<const std::int8_t> value, Span<std::int8_t> out, const ForwardOptionsS8& o) noexcept {
  return mha_s8_run(d, w, arena, sh, query, key, value, out, o, [&](const MhaS8Buffers& buf, std::size_t b) {
    sequence<R, Reference>(d, w, table, sh, query, key, value, out, o, buf, b);
  });
}

#define EMHA_S8_GENERAL(R, Ref)                                                                                   \
  template Status mha_s8_general<R, Ref>(const MhaDims&, const MhaS8Weights&, const SoftmaxS8Table&, ArenaRef&, \
                                         const AttentionShape&, Span<const std::int8_t>, Span<const std::int8_t>, \
                                         Span<const std::int8_t>, Span<std::int8_t>, const ForwardOptionsS8&) noexcept;
EMHA_S8_GENERAL(Rounding::double_rounding, false)
EMHA_S8_GENERAL(Rounding::double_rounding, true)
EMHA_S8_GENERAL(Rounding::single_rounding, false)
EMHA_S8_GENERAL(Rounding::single_rounding, true)
#undef EMHA_S8_GENERAL

}  // namespace emha::detail

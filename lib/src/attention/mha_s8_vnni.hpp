// SPDX-License-Identifier: Apache-2.0
#pragma once
// The full-integer layer's pass on AVX-512 VNNI (mha_s8_forward.cpp runs it for double rounding
// where head_dim is a multiple of 4, the general pass otherwise): the general pass's steps and
// bytes, with every product a VPDPBUSD of a vector against a broadcast dword, so that each
// accumulator holds 16 outputs and no sum is reduced across lanes.
//   "By 4": a [rows x dim] int8 matrix stored [dim / 4][rows][4], the dword (g, i) holding row
//   i's elements 4g .. 4g + 3; 16 consecutive dwords are 16 rows' four elements, one vector.
//   VPDPBUSD multiplies unsigned bytes by signed ones. The operand that is neither a weight nor
//   K or V is stored + 128 (unsigned: x ^ 0x80), and the 128 comes back out through a row sum,
//   as the zero points do:
//   1. Q, K, V: the input + 128, by 4, 64 rows at a time, against each weight row's dwords
//      broadcast: 4 output channels x 64 rows in 16 accumulators. sum_k w x = sum_k w (x + 128)
//      - 128 sum_k w: the weights' row sums join the bias once per forward. Requantized in
//      registers; Q stored by 4 and + 128, K by 4, V^T as rows (a channel's rows contiguous).
//   2. Per head and 4 query rows, Q K^T: each row's dword of Q broadcast against 16 keys' of K,
//      4 rows x 64 keys per block. sum_d (q + 128) k = sum_d q k + 128 sum_d k, and sum_d k is
//      K's row sum (the general pass's term, there times -z_Q, here -(128 + z_Q)). Scores
//      requantized in registers, the softmax four rows at a time (the general pass's bytes); the
//      probabilities + 128 (their zero point is -128: p + 128 is the weight, 0 for a masked key)
//      stored by 4 for mha_s8_pack_queries (32) query rows.
//   3. Per head and 32 query rows, P V: V^T's dword per channel broadcast against the rows'
//      probabilities, 8 channels x 32 rows per block; sum_j (p + 128)(v - z_V) =
//      sum_j (p + 128) v - z_V sum_j (p + 128). The context requantized, stored by 4 and + 128
//      for step 4.
//   4. out: as step 1, from the context, written row by row in the caller's layout.

#include "simd_arch.hpp"
#if EMHA_SIMD && defined(__AVX512VNNI__) && defined(__AVX512BW__)

#include <cstddef>
#include <cstdint>

#include "attention/integer_pass.hpp"
#include "attention/mha_s8_general.hpp"
#include "attention/mha_s8_vnni_attend.hpp"
#include "attention/mha_s8_vnni_project.hpp"
#include "emha/attention/options_s8.hpp"
#include "emha/detail/mha_s8_plan.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {
namespace vnni {

// One sequence's pass (b of the batch) in the arena's buffers.
inline void sequence(const MhaDims& d, const MhaS8Weights& w, const SoftmaxS8Table& table, const AttentionShape& sh,
                     Span<const std::int8_t> query, Span<const std::int8_t> key, Span<const std::int8_t> value,
                     Span<std::int8_t> out, const ForwardOptionsS8& o, const MhaS8Buffers& buf, std::size_t b) noexcept {
  const std::size_t sq = sh.seq_q, skv = sh.seq_kv, dk = d.d_k(), kv = d.kv_dim(), q_dim = d.q_dim();
  const auto packed = [&](const std::int8_t* x, std::size_t seq, std::size_t in) {  // rows packed here
    const Rows<const std::int8_t> rows = rows_of(x, sh, b, seq, in);
    return [rows, in, to = buf.packed](std::size_t i0, std::size_t n) { return pack_rows(n, in, rows, i0, to); };
  };
  project(sq, d.d_model, q_dim, w.q, w.zero_point_q, buf.sums, Dest{buf.q, sq * 4, Kind::by4_offset},
          packed(query.data, sq, d.d_model));
  project(skv, d.kdim, kv, w.k, w.zero_point_k, buf.sums, Dest{buf.k, skv * 4, Kind::by4}, packed(key.data, skv, d.kdim));
  project(skv, d.vdim, kv, w.v, w.zero_point_v, buf.sums, Dest{buf.vt, skv, Kind::channel_rows},
          packed(value.data, skv, d.vdim));
  for (std::size_t g = 0; g < d.kv_heads; ++g)
    key_terms(skv, dk, buf.k + g * dk * skv, w.zero_point_q, buf.k_sums + g * skv);
  for (std::size_t h = 0; h < d.heads; ++h) {
    const std::size_t g = h / d.group();
    const Attend a{dk, sq, skv, buf.q + h * dk * sq, buf.k + g * dk * skv, buf.vt + g * dk * skv, buf.k_sums + g * skv, &w};
    for (std::size_t i0 = 0; i0 < sq; i0 += mha_s8_pack_queries) {
      const std::size_t block = sq - i0 < mha_s8_pack_queries ? sq - i0 : mha_s8_pack_queries;
      std::int32_t q_terms[mha_s8_pack_queries];
      query_terms(a, i0, q_terms);
      for (std::size_t i = i0; i < i0 + block; i += 4) {
        const std::size_t rows = i0 + block - i < 4 ? i0 + block - i : 4;
        scores(a, i, rows, q_terms + (i - i0), keys_used(o.masks, skv, i + rows - 1), buf.p);
        std::size_t used[4];
        for (std::size_t r = 0; r < rows; ++r) used[r] = keys_used(o.masks, skv, i + r);
        if (!key_masks(o.masks)) softmax_rows(rows, used, buf.p, skv, table, buf.p, buf.sums);  // in place
        for (std::size_t r = 0; r < rows; ++r) {
          std::int8_t* p_out =
              o.attn_weights.data ? o.attn_weights.data + ((b * d.heads + h) * sq + i + r) * skv : nullptr;
          std::int8_t* row = buf.p + r * skv;  // its scores, then in place its probabilities
          row_probabilities(d, sh, o.masks, b, h, i + r, used[r], row, buf.probs, buf.keep, std::int8_t(INT8_MIN), row,
                            p_out, [&](std::size_t n, const std::int8_t* x, std::int8_t* y) {
                              if (key_masks(o.masks)) softmax_rows(1, &n, x, n, table, y, buf.sums);
                            });  // without key masks softmax_rows has made them, four rows at once
        }
        store_probabilities(skv, buf.p, rows, i - i0, buf.packed);
      }
      context(a, buf.packed, i0, block, h, buf.context);
    }
  }
  const Rows<std::int8_t> y = rows_of(out.data, sh, b, sq, d.d_model);
  project(sq, q_dim, d.d_model, w.out, w.zero_point_out, buf.sums, Dest{y.p, y.ld, Kind::rows},
          [&](std::size_t i0, std::size_t) { return By4{buf.context + i0 * 4, sq * 4}; });
}

inline constexpr bool available = true;

}  // namespace vnni
}  // namespace EMHA_ISA
}  // namespace emha::detail

#else  // no VNNI in this variant: the general pass runs

namespace emha::detail {
inline namespace EMHA_ISA {
namespace vnni {
inline constexpr bool available = false;
template <class... A>
void sequence(const A&...) noexcept {}  // never called: mha_s8_core.cpp tests available
}  // namespace vnni
}  // namespace EMHA_ISA
}  // namespace emha::detail

#endif

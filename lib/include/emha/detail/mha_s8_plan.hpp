// SPDX-License-Identifier: Apache-2.0
#pragma once
// The size-erased core of the full-integer layer (emha/attention/mha_s8.hpp): its Config checks,
// its arena and its compiled pass (lib/src/attention/mha_s8_forward.cpp).

#include <cstddef>
#include <cstdint>

#include "emha/arena.hpp"
#include "emha/attention/config.hpp"
#include "emha/attention/options_s8.hpp"
#include "emha/detail/config_check.hpp"
#include "emha/detail/mha_plan.hpp"
#include "emha/kernels/gemm_s8.hpp"
#include "emha/kernels/softmax_s8.hpp"
#include "emha/status.hpp"

namespace emha::detail {

// What the integer layers (s8, s16x8) do not have (tests/attention/fail/ proves each).
template <class C>
constexpr bool check_config_s8() {
  static_assert(C::position == Position::none, "arithmetic s8 and s16x8 have no positions");
  static_assert(C::norm == NormPlacement::none && C::qk_norm == QkNorm::none, "arithmetic s8 and s16x8 have no norms");
  static_assert(C::sliding_window == 0, "arithmetic s8 and s16x8 have no sliding window");
  static_assert(C::attn_logit_softcapping == 0.0f, "arithmetic s8 and s16x8 have no soft-capping");
  static_assert(C::head_split == HeadSplit::columns, "arithmetic s8 and s16x8 split heads by columns");
  static_assert(C::weight_type == WeightType::f32 && C::kv_cache_type == KvType::f32,
                "arithmetic s8 and s16x8 take their own weights: leave weight_type and kv_cache_type at f32");
  static_assert(C::max_threads == 1, "arithmetic s8 and s16x8 run on the caller's thread: max_threads 1");
  static_assert(C::d_model <= (1u << 15) && C::kdim <= (1u << 15) && C::vdim <= (1u << 15) &&
                    C::max_seq_kv <= (1u << 15) && mha_dims<C>().q_dim() <= (1u << 15),
                "arithmetic s8 and s16x8 sum at most 2^15 products");  // q_dim bounds head_dim too
  return true;
}

// The dims of an s8 Config once both checks have passed (checked_dims).
template <class C>
constexpr MhaDims checked_dims_s8() noexcept {
  static_assert(check_config<C>() && check_config_s8<C>(), "invalid MhaConfig");
  return mha_dims<C>();
}

// The arena of one forward(), per sequence (reused across the batch):
//   Q [S_q x q_dim], K [S_kv x kv_dim], V^T [kv_dim x S_kv], the context [S_q x q_dim] (int8);
//   K's row sums [kv_heads x S_kv] and V^T's over the keys' prefixes of mha_s8_key_chunk
//   [ceil(S_kv / 16) x kv_dim] (int32); int32 sums of mha_s8_attend_rows
//   query rows' keys or of mha_s8_project_rows projected rows [6 x max(S_kv, widths)], and those
//   query rows' Q and probability row sums [2 x 6] (int32; off the stack); one query
//   row's scores, keep flags and packed scores [S_kv each], and mha_s8_attend_rows rows of
//   probabilities [S_kv each] (int8); on x86-64, the VNNI pass's packed operands, and on
//   32-bit ARM, the products' gemm_s8_staged stage (packed, below). 64-byte aligned
//   each.
inline constexpr std::size_t mha_s8_project_rows = gemm_s8_stage_rows;  // rows a projection's gemm takes at once
inline constexpr std::size_t mha_s8_attend_rows = gemm_s8_stage_rows;  // query rows the attention's gemms take
// P V runs over the keys a block of query rows reaches, rounded up to a multiple of this (16:
// Helium's step; the causal blocks skip the masked rest), and V^T's row sums are kept for each
// such prefix of the keys.
inline constexpr std::size_t mha_s8_key_chunk = 16;
// The prefixes of mha_s8_key_chunk keys that cover `keys` keys (at least one).
constexpr std::size_t mha_s8_key_chunks(std::size_t keys) noexcept {
  return keys ? (keys + mha_s8_key_chunk - 1) / mha_s8_key_chunk : 1;
}
// What the arena holds beyond the pass's buffers, decided by the architecture alone (never by
// -march, -mcpu or -mfpu): a user's translation unit and the library, compiled with different
// flags, agree on arena_bytes. On x86-64, the VNNI pass's packed input rows and its block of query
// rows (lib/src/attention/mha_s8_vnni.hpp); on 32-bit ARM, the products' int16 stage
// (gemm_s8_staged), which the DSP variant (Cortex-M4/M7, armv6) fills and NEON's and Helium's
// leave unused; neither elsewhere.
#if defined(__x86_64__) || defined(_M_X64)
inline constexpr std::size_t mha_s8_pack_rows = 64, mha_s8_pack_queries = 32;
inline constexpr bool mha_s8_stage = false;
#elif defined(__arm__) && !defined(__aarch64__)
inline constexpr std::size_t mha_s8_pack_rows = 0, mha_s8_pack_queries = 0;
inline constexpr bool mha_s8_stage = true;
#else
inline constexpr std::size_t mha_s8_pack_rows = 0, mha_s8_pack_queries = 0;
inline constexpr bool mha_s8_stage = false;
#endif
constexpr std::size_t round_up4(std::size_t n) noexcept { return (n + 3) / 4 * 4; }
struct MhaS8Arena {
  std::size_t q, k, vt, context, k_sums, v_sums, sums, row_sums, row, packed;  // bytes of each
};
constexpr MhaS8Arena mha_s8_arena(const MhaDims& d) noexcept {
  const std::size_t kv = d.kv_dim(), skv = d.max_seq_kv;
  std::size_t widest = 0, widest_in = 0;
  for (std::size_t w : {d.q_dim(), kv, d.d_model}) widest = w > widest ? w : widest;
  for (std::size_t w : {d.d_model, d.kdim, d.vdim}) widest_in = w > widest_in ? w : widest_in;
  const std::size_t sums = mha_s8_project_rows * widest > mha_s8_attend_rows * skv ? mha_s8_project_rows * widest
                                                                                 : mha_s8_attend_rows * skv;
  // the packed input rows [round_up4(width) / 4][64][4], or a block of queries' probabilities
  const std::size_t rows_in = mha_s8_pack_rows * round_up4(widest_in), probs = mha_s8_pack_queries * round_up4(skv);
  std::size_t k_max = widest_in > skv ? widest_in : skv;  // the products' longest k
  k_max = d.d_k() > k_max ? d.d_k() : k_max;
  const std::size_t stage = mha_s8_stage ? 2 * gemm_s8_stage_len(k_max) : 0;  // int16
  const std::size_t packed = rows_in > probs ? rows_in : probs;
  return {d.max_seq_q * d.q_dim(), skv * kv, kv * skv, d.max_seq_q * d.q_dim(),  // q, k, vt, context
          skv * d.kv_heads * 4, (skv + mha_s8_key_chunk - 1) / mha_s8_key_chunk * kv * 4,  // k_sums, v_sums
          sums * 4, 2 * mha_s8_attend_rows * 4, (3 + mha_s8_attend_rows) * skv,  // sums, row_sums, row
          packed > stage ? packed : stage};                                      // packed
}
constexpr std::size_t mha_s8_arena_bytes(const MhaDims& d) noexcept {
  const MhaS8Arena a = mha_s8_arena(d);
  std::size_t total = 0;
  for (std::size_t b : {a.q, a.k, a.vt, a.context, a.k_sums, a.v_sums, a.sums, a.row_sums, a.row, a.packed})
    total += arena_round_up(b, 64);
  return total + 64;  // a caller's arena of unknown alignment
}

// ok, or null_pointer / size_mismatch / invalid_argument (mha_s8.hpp's set_weights).
Status mha_s8_check_weights(const MhaDims& d, const MhaS8Weights& w) noexcept;

// The general pass (lib/src/attention/mha_s8_forward.cpp, compiled once), requantizing with
// rounding R, on gemm_s8 or (Reference) the kernels' references (gemm_s8_ref, requantize_s8_ref,
// softmax_s8_ref); `table` is softmax_s8_table<R>(w.softmax). One function per instance, so that a
// firmware links only the ones its Config calls.
template <Rounding R, bool Reference>
Status mha_s8_general(const MhaDims& d, const MhaS8Weights& w, const SoftmaxS8Table& table, ArenaRef& arena,
                      const AttentionShape& shape, Span<const std::int8_t> query, Span<const std::int8_t> key,
                      Span<const std::int8_t> value, Span<std::int8_t> out, const ForwardOptionsS8& options) noexcept;

// forward() with double rounding: the s8 variant's core (kernel_list.def; lib/src/attention/
// mha_s8_core.cpp), the VNNI pass where it applies, else mha_s8_general<double_rounding, false>.
Status mha_s8_forward_core(const MhaDims& d, const MhaS8Weights& w, const SoftmaxS8Table& table, ArenaRef& arena,
                           const AttentionShape& shape, Span<const std::int8_t> query,
                           Span<const std::int8_t> key, Span<const std::int8_t> value, Span<std::int8_t> out,
                           const ForwardOptionsS8& options) noexcept;

// forward() (Reference: forward_reference()) with rounding R.
template <Rounding R, bool Reference>
Status mha_s8_forward(const MhaDims& d, const MhaS8Weights& w, const SoftmaxS8Table& table, ArenaRef& arena,
                      const AttentionShape& shape,
                      Span<const std::int8_t> query, Span<const std::int8_t> key, Span<const std::int8_t> value,
                      Span<std::int8_t> out, const ForwardOptionsS8& options) noexcept {
  if constexpr (R == Rounding::double_rounding && !Reference)
    return mha_s8_forward_core(d, w, table, arena, shape, query, key, value, out, options);
  else
    return mha_s8_general<R, Reference>(d, w, table, arena, shape, query, key, value, out, options);
}

}  // namespace emha::detail

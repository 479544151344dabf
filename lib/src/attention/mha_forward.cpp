// SPDX-License-Identifier: Apache-2.0
// MultiHeadAttention forward pass: per sequence of the batch, the stages the Config chose, in this
// order (each a file of its own; plan_of() picks them once per call):
//   norm_input   pre-LN: Norm(x) for the projections                  stage_norm.hpp
//   project      [Q | K | V] = inputs * W_in^T + b_in                 stage_project.hpp
//   split_flat   the flat head split: Q, K, V to the column split      stage_flat.hpp
//   qk_norm      QK-norm: RMSNorm of Q and K                           stage_qk_norm.hpp
//   rope / xpos  positions on Q and K                                 stage_position.hpp
//   append       with a KvCache: the new K | V rows into the cache     stage_cache.hpp
//   attend       per head: ctx_h = softmax(scale Q_h K_h^T + ALiBi or T5's bias + masks) V_h
//                (fused unless the caller wants the attention weights) stage_attend.hpp
//                one token with GQA/MQA: a group's heads stacked, one pass over their K/V
//                                                                     group_attention.hpp
//   merge_flat   the flat head split: ctx back to its flat view        stage_flat.hpp
//   norm_heads   sub-LN: ctx = Norm(ctx)                              stage_norm.hpp
//   output       out = ctx * W_out^T + b_out (+ x with a pre- or post-LN residual)
//                                                                     stage_output.hpp
//   norm_output  post-LN: out = Norm(out)                             stage_norm.hpp
// project_kv() runs one stage, fill: key and value projected into the cache (stage_cache.hpp);
// forward_static_kv() the stages above without positions or append (its K | V are the cache's).
// Arguments are validated first (mha_validate.cpp), so an error leaves the outputs untouched.

#include "attention/kernel_set.hpp"
#include "attention/mha_validate.hpp"
#include "attention/pass.hpp"
#include "attention/return_on_error.hpp"
#include "attention/stage_attend.hpp"
#include "attention/stage_cache.hpp"
#include "attention/stage_flat.hpp"
#include "attention/stage_norm.hpp"
#include "attention/stage_output.hpp"
#include "attention/stage_position.hpp"
#include "attention/stage_project.hpp"
#include "attention/stage_qk_norm.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {
namespace {

enum class Stage : unsigned char {
  norm_input, project, split_flat, qk_norm, rope, xpos, append, attend, merge_flat, norm_heads, output,
  residual_output, norm_output, fill,
};

// At most 7 stages run: one norm placement, no positions or cache with the flat split. Small: the
// plan sits in mha_forward's frame, on the deepest stack chain (Cortex-M55 at its 1 KiB budget).
struct StagePlan {
  Stage stage[8];
  unsigned char count;
};

constexpr StagePlan plan_of(const MhaDims& d, const KvCacheView* cache) noexcept {
  StagePlan p{};
  const auto add = [&p](Stage s) { p.stage[p.count++] = s; };
  if (cache && cache->use == KvUse::fill) {
    add(Stage::fill);
    return p;
  }
  if (d.norm == NormPlacement::pre) add(Stage::norm_input);
  add(Stage::project);
  if (d.head_split == HeadSplit::flat_view) add(Stage::split_flat);  // no cache (KvCache's check)
  if (d.qk_norm != QkNorm::none) add(Stage::qk_norm);
  if (d.position == Position::rope) add(Stage::rope);  // none over static K/V (validated)
  if (d.position == Position::xpos) add(Stage::xpos);
  if (cache && cache->use == KvUse::append) add(Stage::append);
  add(Stage::attend);
  if (d.head_split == HeadSplit::flat_view) add(Stage::merge_flat);
  if (d.norm == NormPlacement::sub) add(Stage::norm_heads);
  const bool residual = d.norm == NormPlacement::pre || d.norm == NormPlacement::post;
  add(residual ? Stage::residual_output : Stage::output);
  if (d.norm == NormPlacement::post) add(Stage::norm_output);
  return p;
}

// A switch, not a table of function pointers: every call is direct, so a firmware's stack bound
// (tests/firmware/stack_budget.py) follows it. The stages outside Stages (mha_stages) are not in
// it, so a pass references no code of theirs, and its projections are Stages' weight type's.
template <class K, unsigned Stages>
Status run_stage(Stage stage, const Pass& s, std::size_t b) noexcept {
  constexpr bool norm = Stages & mha_stage_norm, flat = Stages & mha_stage_flat, q8 = Stages & mha_stage_int8;
  constexpr bool kv8 = Stages & mha_stage_kv8;
  switch (stage) {
    case Stage::project: return project_stage<K, q8>(s, b);
    case Stage::append: return append_stage<K, kv8>(s, b);
    case Stage::attend:
      if constexpr (kv8)  // a call with the cache reads int8 rows; one without, Q|K|V's floats
        if (s.cache) return attend_stage<K, true>(s, b);
      return attend_stage<K, false>(s, b);
    case Stage::output: return output_stage<K, q8>(s, b);
    case Stage::fill: return fill_stage<K, q8, kv8>(s, b);
    case Stage::norm_input: if constexpr (norm) return norm_input_stage<K>(s, b); break;
    case Stage::norm_heads: if constexpr (norm) return norm_heads_stage<K>(s, b); break;
    case Stage::residual_output: if constexpr (norm) return residual_output_stage<K, q8>(s, b); break;
    case Stage::norm_output: if constexpr (norm) return norm_output_stage<K>(s, b); break;
    case Stage::split_flat: if constexpr (flat) return split_flat_stage<K>(s, b); break;
    case Stage::merge_flat: if constexpr (flat) return merge_flat_stage<K>(s, b); break;
    case Stage::qk_norm: if constexpr ((Stages & mha_stage_qk_norm) != 0) return qk_norm_stage<K>(s, b); break;
    case Stage::rope: if constexpr ((Stages & mha_stage_rope) != 0) return rope_stage<K>(s, b); break;
    case Stage::xpos: if constexpr ((Stages & mha_stage_xpos) != 0) return xpos_stage<K>(s, b); break;
  }
  return Status::invalid_argument;  // not in the plan of a Config with these stages
}

// Inlined into each entry point that runs it: a frame of its own under theirs takes forward over
// the 1 KiB stack budget on Cortex-M55 (tests/firmware/stack_budget.py).
template <class K, unsigned Stages>
[[gnu::always_inline]] inline Status forward_pass(const MhaDims& d, const MhaWeights& w, const MhaPacked& packed,
                    const MhaPositions& positions, ArenaRef& arena, const AttentionShape& sh,
                    const Span<const float>& query, const Span<const float>& key,
                    const Span<const float>& value, const Span<float>& out,
                    const ForwardOptions& o, const KvCacheView* cache) noexcept {
  EMHA_TRY(mha_check_call(d, w, arena, sh, query, key, value, out, o, cache));
  ArenaScope scope(arena);
  // Pre-LN: the projections read Norm(query) from out, for each input that is the query
  // (project_kv has neither: its key and value are the encoder's output).
  const bool fill = cache && cache->use == KvUse::fill;
  const float* normed = d.norm == NormPlacement::pre && !fill ? out.data : query.data;
  Pass s{d,         w,           packed,   positions, sh,      o,       query.data,
         normed,    key.data == query.data ? normed : key.data,
         value.data == query.data ? normed : value.data, out.data, nullptr, nullptr, nullptr,
         {nullptr, d.slot_bytes, d.threads}, cache, kv_rows_projected(sh, cache)};
  const std::size_t q_rows = fill ? 0 : sh.seq_q, rows = q_rows > s.new_kv ? q_rows : s.new_kv;
  EMHA_TRY(arena.allocate(rows * d.qkv_dim(), s.qkv, 64));
  EMHA_TRY(arena.allocate(q_rows * d.q_dim(), s.ctx, 64));
  if (K::stack_groups && q_rows == 1 && mha_split_floats(d) > 0)
    EMHA_TRY(arena.allocate(mha_split_floats(d), s.split, 64));
  EMHA_TRY(arena.allocate(d.threads * s.slots.bytes, s.slots.base, 64));
  const StagePlan plan = plan_of(d, cache);
  for (std::size_t b = 0; b < sh.batch; ++b)
    for (std::size_t i = 0; i < plan.count; ++i) EMHA_TRY((run_stage<K, Stages>(plan.stage[i], s, b)));
  for (std::size_t b = 0; cache && b < sh.batch; ++b) {
    if (cache->use == KvUse::append) cache->lengths[b] += sh.seq_q;
    if (fill) cache->lengths[b] = sh.seq_kv, cache->firsts[b] = 0;
  }
  return Status::ok;
}

}  // namespace

MhaPacked mha_pack_weights(const MhaDims& d, const MhaWeights& w, float* packed) noexcept {
  const InProj p = in_proj(d, w);
  const bool q8 = d.int8_weights;
  const void* src[4] = {p.w[0], p.w[1], p.w[2],
                        q8 ? static_cast<const void*>(w.out_proj_weight_int8.data) : w.out_proj_weight.data};
  const float* scale[4] = {q8 ? in_proj_scale(d, w, 0) : nullptr, q8 ? in_proj_scale(d, w, 1) : nullptr,
                           q8 ? in_proj_scale(d, w, 2) : nullptr, w.out_proj_weight_scale.data};
  const std::size_t in[4] = {p.ld[0], p.ld[1], p.ld[2], d.q_dim()};
  auto* at = reinterpret_cast<unsigned char*>(packed);
  MhaPacked out{};
  for (int i = 0; i < 4; ++i) {
    const std::size_t n = i < 3 ? d.proj_dim(i) : d.d_model, bytes = mha_packed_bytes(d, n, in[i]);
    // op(B) = W^T: [in x n] from W [n x in], into the object's storage (mha_packed_floats).
    const Status st =
        q8 ? detail::gemm_w8a32_pack_b(n, in[i], static_cast<const std::int8_t*>(src[i]), in[i], scale[i],
                                       reinterpret_cast<std::int8_t*>(at), bytes)
           : detail::gemm_f32_pack_b(n, in[i], static_cast<const float*>(src[i]), in[i], Trans::transpose,
                                     reinterpret_cast<float*>(at), bytes / sizeof(float));
    if (st != Status::ok) return MhaPacked{};
    out.w[i] = at;
    out.bytes[i] = bytes;
    at += bytes;
  }
  return out;
}

namespace {
// Every stage, for one weight type: out of line, so that mha_forward's frame holds neither
// pass (both inlined into it took Cortex-M over its stack budget) and calls one by tail call.
template <unsigned Stages>
[[gnu::noinline]] Status forward_all(const MhaDims& d, const MhaWeights& w, const MhaPacked& packed,
                                     const MhaPositions& positions, ArenaRef& arena, const AttentionShape& sh,
                                     Span<const float> query, Span<const float> key, Span<const float> value,
                                     Span<float> out, const ForwardOptions& o, const KvCacheView* cache) noexcept {
  return forward_pass<SimdKernels, Stages>(d, w, packed, positions, arena, sh, query, key, value, out, o, cache);
}
}  // namespace

// The whole pass, for either weight type and either cache type: every Config's forward() on
// x86's run-time dispatch.
Status mha_forward(const MhaDims& d, const MhaWeights& w, const MhaPacked& packed,
                    const MhaPositions& positions, ArenaRef& arena, const AttentionShape& sh,
                    Span<const float> query, Span<const float> key, Span<const float> value,
                    Span<float> out, const ForwardOptions& o, const KvCacheView* cache) noexcept {
  constexpr unsigned all = mha_stages_all, q8 = mha_stage_int8, kv8 = mha_stage_kv8;
  if (d.int8_weights && d.kv_int8)
    return forward_all<all | q8 | kv8>(d, w, packed, positions, arena, sh, query, key, value, out, o, cache);
  if (d.int8_weights)
    return forward_all<all | q8>(d, w, packed, positions, arena, sh, query, key, value, out, o, cache);
  if (d.kv_int8)
    return forward_all<all | kv8>(d, w, packed, positions, arena, sh, query, key, value, out, o, cache);
  return forward_all<all>(d, w, packed, positions, arena, sh, query, key, value, out, o, cache);
}

namespace {
// The reference pass (RefKernels) for one weight type and one cache type, out of line as
// forward_all.
template <unsigned Stages>
[[gnu::noinline]] Status reference_pass(const MhaDims& d, const MhaWeights& w, const MhaPositions& positions,
                                        ArenaRef& arena, const AttentionShape& sh, Span<const float> query,
                                        Span<const float> key, Span<const float> value, Span<float> out,
                                        const ForwardOptions& o, const KvCacheView* cache) noexcept {
  return forward_pass<RefKernels, Stages>(d, w, MhaPacked{}, positions, arena, sh, query, key, value, out, o, cache);
}
}  // namespace

Status mha_forward_ref(const MhaDims& d, const MhaWeights& w, const MhaPositions& positions,
                        ArenaRef& arena, const AttentionShape& sh, Span<const float> query,
                        Span<const float> key, Span<const float> value, Span<float> out,
                        const ForwardOptions& o, const KvCacheView* cache) noexcept {
  if (d.kv_int8)
    return reference_pass<mha_stages_all | mha_stage_kv8>(d, w, positions, arena, sh, query, key, value, out, o,
                                                          cache);
  return reference_pass<mha_stages_all>(d, w, positions, arena, sh, query, key, value, out, o, cache);
}

Status mha_forward_ref_int8(const MhaDims& d, const MhaWeights& w, const MhaPositions& positions,
                             ArenaRef& arena, const AttentionShape& sh, Span<const float> query,
                             Span<const float> key, Span<const float> value, Span<float> out,
                             const ForwardOptions& o, const KvCacheView* cache) noexcept {
  constexpr unsigned q8 = mha_stages_all | mha_stage_int8;
  if (d.kv_int8)
    return reference_pass<q8 | mha_stage_kv8>(d, w, positions, arena, sh, query, key, value, out, o, cache);
  return reference_pass<q8>(d, w, positions, arena, sh, query, key, value, out, o, cache);
}

}  // namespace EMHA_ISA

#if !EMHA_X86_DISPATCH
// One variant: a Config's forward() calls its stage set's pass here directly (dispatch.cpp
// forwards x86's run-time choice to the whole pass instead).
template <unsigned Stages>
Status mha_forward_staged(const MhaDims& d, const MhaWeights& w, const MhaPacked& packed,
                          const MhaPositions& positions, ArenaRef& arena, const AttentionShape& sh,
                          Span<const float> query, Span<const float> key, Span<const float> value,
                          Span<float> out, const ForwardOptions& o, const KvCacheView* cache) noexcept {
  return EMHA_ISA::forward_pass<SimdKernels, Stages>(d, w, packed, positions, arena, sh, query, key, value, out, o,
                                                    cache);
}
EMHA_FOR_EACH_STAGE_SET(EMHA_INSTANTIATE_STAGED)
#endif

}  // namespace emha::detail

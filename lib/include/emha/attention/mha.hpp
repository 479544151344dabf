// SPDX-License-Identifier: Apache-2.0
#pragma once
// torch.nn.MultiheadAttention for a compile-time Config, with no heap: all scratch comes from an
// arena of exactly `arena_bytes`, owned by the object or supplied by the caller.

#include <cstddef>

#include "emha/arena.hpp"
#include "emha/attention/config.hpp"
#include "emha/attention/kv_cache.hpp"
#include "emha/detail/layer_storage.hpp"
#include "emha/detail/mha_plan.hpp"
#include "emha/attention/options.hpp"
#include "emha/status.hpp"

namespace emha {

// Arithmetic::f32 (the Config's arithmetic selects the class: s8 is emha/attention/mha_s8.hpp,
// s16x8 emha/attention/mha_s16x8.hpp).
template <class Config, ArenaOwnership Own = ArenaOwnership::owned, Arithmetic = Config::arithmetic>
class MultiHeadAttention : public detail::LayerArena<Own, detail::mha_arena_bytes(detail::checked_dims<Config>())> {
  using Storage = detail::LayerArena<Own, detail::mha_arena_bytes(detail::checked_dims<Config>())>;

  static_assert(detail::check_config<Config>(), "invalid MhaConfig");

 public:
  using config = Config;
  static constexpr detail::MhaDims dims = detail::mha_dims<Config>();
  // Scratch bytes forward() needs: the arena's size (owned) or the minimum a caller passes.
  static constexpr std::size_t arena_bytes = detail::mha_arena_bytes(dims);
  // Bytes of the object's copy of the weights in panel layout (0 with prepack_weights off).
  static constexpr std::size_t packed_weight_bytes =
      Config::prepack_weights ? detail::mha_packed_floats(dims) * sizeof(float) : 0;
  // Bytes of the object's position tables: RoPE/xPos cos and sin, or ALiBi's slopes (else 0),
  // filled by the constructor.
  static constexpr std::size_t position_table_bytes = detail::mha_position_floats(dims) * sizeof(float);
  // Floats of the object's copy of 1 + q_norm_weight and 1 + k_norm_weight (Gemma's RMSNorm,
  // Config::qk_norm_unit_offset), made by set_weights(); else 0.
  static constexpr std::size_t unit_offset_floats =
      Config::qk_norm_unit_offset ? dims.q_norm_dim() + dims.k_norm_dim() : 0;

  // Owned arena: MultiHeadAttention(); the caller's: MultiHeadAttention(ArenaRef) or
  // MultiHeadAttention(StaticArena&) (detail::LayerArena). Not copyable.
  using Storage::Storage;

  // Takes the weights (kept by pointer: they must outlive this object). Returns null_pointer or
  // size_mismatch when a needed span is missing or not exactly its size, invalid_argument when
  // the wrong form is given (in_proj_weight for kdim/vdim != d_model, or biases with bias off).
  // A span is absent only as {nullptr, 0}: {nullptr, n} is null_pointer wherever it appears, as
  // in forward(). On an error the weights set before (if any) stay in use.
  Status set_weights(const MhaWeights& w) noexcept {
    const Status s = detail::mha_check_weights(dims, w);
    if (s == Status::ok) {
      weights_ = w;
      if constexpr (Config::prepack_weights) packed_ = detail::mha_pack_weights(dims, w, packed_storage_.data);
      if constexpr (unit_offset_floats > 0) weights_ = detail::mha_unit_offset(dims, w, unit_offset_storage_.data);
      positions_.relative.table = w.relative_attention_bias.data;
      has_weights_ = true;
    }
    return s;
  }

  // out = MHA(query, key, value), exactly as torch.nn.MultiheadAttention.forward in eval mode.
  //   query: [B, S_q, d_model] or [S_q, B, d_model] (shape.layout), key: [.., S_kv, kdim],
  //   value: [.., S_kv, vdim], out: like query. Row-major; spans hold at least that many floats;
  //   self-attention may pass the same span three times.
  // Without attn_weights the fused (flash-attention) path runs; with them, the unfused one.
  // With the Config's members around attention, the stages run in this order: pre-LN norm of
  // the query, projections, RoPE/xPos on Q and K, attention (ALiBi, masks, score bias), sub-LN,
  // output projection (+ the query, pre- and post-LN), post-LN norm (mha_forward.cpp).
  // Errors (nothing written to out or attn_weights): invalid_argument (no weights, a zero size,
  // a key length > S_kv, attn_weights with Config::attention_weights off, a Layout or MaskShape
  // outside its enumerators, a scale that is not finite, positions (rope, xpos, alibi) without
  // self-attention: query, key and value one span and S_q == S_kv, an attend mask whose rows
  // are not S_q or 1 or whose batch is not B or 1), too_long (S_q, S_kv or B above the
  // Config maxima), null_pointer (a required span, or a given one, with a null pointer),
  // size_mismatch (a span too small), overlap (out or attn_weights sharing a byte with an input,
  // a mask, the weights, each other or a caller's arena), no_space (a caller arena smaller than
  // arena_bytes). Any causal_offset is exact: from S_kv - 1 up to SIZE_MAX it masks nothing.
  Status forward(const AttentionShape& shape, Span<const float> query, Span<const float> key,
                 Span<const float> value, Span<float> out,
                 const ForwardOptions& options = {}) noexcept {
    if (!has_weights_) return Status::invalid_argument;
    return core(dims, weights_, packed_, positions_, this->scratch_.get(), shape, query, key,
                               value, out, options, nullptr);
  }

  // Incremental decoding: self-attention of new tokens over a KvCache of this Config (a cache of
  // another Config does not compile). x and out: [B, n, d_model] or [n, B, d_model] with
  // n = shape.seq_q new tokens for each of the B = shape.batch sequences 0 .. B - 1 of the cache.
  // Sequence b's new tokens sit at positions len_b .. len_b + n - 1 (len_b = cache.length(b)):
  // their K and V are projected once (RoPE or xPos at those positions; xPos centred on the
  // cache's capacity, see xpos_centred_f32), appended, and query i attends to keys 0 .. len_b + i
  // when masks.causal is set (the causal mask aligned bottom-right; masks.causal_offset adds to
  // len_b), and to the last Config::sliding_window of them with a window. Prefill (many tokens)
  // and decode steps (one or a few) are the same call. Masks are laid over shape.seq_kv keys,
  // which must be cache.keys(n, B): max_b(len_b) + n, or with a rolling cache the most keys a
  // sequence holds after the call (key k of sequence b is position cache.first_key(b, n) + k).
  // They are key_ignored [B, seq_kv], an attn_mask [seq_q, seq_kv], attention weights out; a
  // sequence with fewer keys ignores the keys past its own (weights 0).
  // Errors, with the cache and the outputs untouched: too_long (len_b + n above the cache's
  // capacity; for a rolling cache, n above capacity - min(held_b, W - 1), held_b the rows
  // sequence b holds before the call; RoPE positions past its table; B above the cache's batch),
  // invalid_argument (shape.seq_kv not cache.keys(n, B)), and every error of forward() above;
  // overlap also when out shares a byte with the cache.
  template <std::size_t Cap, std::size_t Batch, ArenaOwnership CacheOwn>
  Status forward(const AttentionShape& shape, Span<const float> x, Span<float> out,
                 KvCache<Config, Cap, Batch, CacheOwn>& cache, const ForwardOptions& options = {}) noexcept {
    if (!has_weights_) return Status::invalid_argument;
    const detail::KvCacheView view = cache.view();
    return core(dims, weights_, packed_, positions_, this->scratch_.get(), shape, x, x, x, out,
                               options, &view);
  }

  // Cross-attention over static K/V (torchscale's encoder_decoder_attention with static_kv; a
  // speech or translation decoder attending to its encoder's output at every step): project_kv()
  // projects key [B, S_kv, kdim] and value [B, S_kv, vdim] (shape.layout; shape.seq_q unused)
  // once into sequences 0 .. B - 1 of a cache, replacing what they held (length S_kv each), and
  // forward_static_kv() attends query [B, S_q, d_model] to them without projecting or appending
  // anything: out = what forward(query, key, value) gives. Masks as forward() with S_kv =
  // shape.seq_kv = max_b cache.length(b) (a sequence with fewer keys ignores the ones past its
  // own; causal is top-left, as forward()'s, masks.causal_offset moving it for later queries).
  // Pre-LN normalizes the query only (key and value are not it).
  // Errors, nothing written: project_kv: too_long (S_kv above the cache's capacity, B above its
  // batch), invalid_argument (a zero size, a layout outside its enumerators, a rolling cache),
  // null_pointer / size_mismatch (key or value), overlap (the cache and an input, the weights or
  // the arena), no_space (a caller arena below arena_bytes); forward_static_kv: invalid_argument
  // (positions or a sliding window in the Config: self-attention's; shape.seq_kv not max_b
  // length(b); an empty sequence), too_long (B above the cache's batch), and every error of
  // forward().
  template <std::size_t Cap, std::size_t Batch, ArenaOwnership CacheOwn>
  Status project_kv(const AttentionShape& shape, Span<const float> key, Span<const float> value,
                    KvCache<Config, Cap, Batch, CacheOwn>& cache) noexcept {
    if (!has_weights_) return Status::invalid_argument;
    const detail::KvCacheView view = cache.view(detail::KvUse::fill);
    return core(dims, weights_, packed_, positions_, this->scratch_.get(), shape, key, key, value,
                               Span<float>{}, ForwardOptions{}, &view);
  }
  template <std::size_t Cap, std::size_t Batch, ArenaOwnership CacheOwn>
  Status forward_static_kv(const AttentionShape& shape, Span<const float> query, Span<float> out,
                           const KvCache<Config, Cap, Batch, CacheOwn>& cache,
                           const ForwardOptions& options = {}) noexcept {
    if (!has_weights_) return Status::invalid_argument;
    const detail::KvCacheView view = cache.view_read();
    return core(dims, weights_, packed_, positions_, this->scratch_.get(), shape, query, query, query,
                               out, options, &view);
  }

  // forward() computed by the scalar reference kernels: the oracle the SIMD path is measured
  // against (tests, the benchmark's deviation column). Same contract; much slower.
  Status forward_reference(const AttentionShape& shape, Span<const float> query,
                           Span<const float> key, Span<const float> value, Span<float> out,
                           const ForwardOptions& options = {}) noexcept {
    if (!has_weights_) return Status::invalid_argument;
    return reference(dims, weights_, positions_, this->scratch_.get(), shape, query, key, value, out, options, nullptr);
  }
  template <std::size_t Cap, std::size_t Batch, ArenaOwnership CacheOwn>
  Status forward_reference(const AttentionShape& shape, Span<const float> x, Span<float> out,
                           KvCache<Config, Cap, Batch, CacheOwn>& cache,
                           const ForwardOptions& options = {}) noexcept {
    if (!has_weights_) return Status::invalid_argument;
    const detail::KvCacheView view = cache.view();
    return reference(dims, weights_, positions_, this->scratch_.get(), shape, x, x, x, out, options, &view);
  }


 private:
  // The reference pass of the Config's weight type (a layer links one).
  template <class... A>
  static Status reference(A&&... a) noexcept {
    if constexpr (Config::weight_type == WeightType::int8)
      return detail::mha_forward_ref_int8(static_cast<A&&>(a)...);
    else
      return detail::mha_forward_ref(static_cast<A&&>(a)...);
  }

  // The compiled pass with the stages the Config runs (detail::mha_stages), so that a firmware
  // links no other stage.
  template <class... A>
  static Status core(A&&... a) noexcept {
    return detail::mha_forward_staged<detail::mha_stages<Config>()>(static_cast<A&&>(a)...);
  }

  detail::ObjectFloats<Config::prepack_weights, detail::mha_packed_floats(dims)> packed_storage_;
  detail::ObjectFloats<(detail::mha_position_floats(dims) > 0), detail::mha_position_floats(dims)>
      position_storage_;
  detail::ObjectFloats<(unit_offset_floats > 0), unit_offset_floats> unit_offset_storage_;
  detail::MhaPacked packed_{};
  detail::MhaPositions positions_ = detail::mha_fill_positions<Config>(dims, position_storage_.data);
  MhaWeights weights_{};
  bool has_weights_ = false;
};

}  // namespace emha

#include "emha/attention/mha_s8.hpp"
#include "emha/attention/mha_s16x8.hpp"

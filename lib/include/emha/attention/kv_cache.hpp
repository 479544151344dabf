// SPDX-License-Identifier: Apache-2.0
#pragma once
// A fixed-capacity key/value cache for incremental decoding with MultiHeadAttention<Config>:
// projected K and V (after RoPE when the Config has it) of up to Capacity positions for each of
// Batch sequences, in storage whose size is a compile-time constant, owned or the caller's (e.g. a
// buffer in a linker section).
//
// Layout, head-major (HF's StaticCache [B, H_kv, S_max, d_k], K then V): sequence b, K (kind 0)
// or V (1), K/V head g is a block [Capacity x d_k], position p in its row p:
//   data[((b * 2 + kind) * kv_heads + g) * Capacity * d_k + p * d_k ..]
// Config::kv_cache_type = KvType::int8: the same layout of int8 values, and one float scale per
// row, scales[((b * 2 + kind) * kv_heads + g) * Capacity + p] (emha/kernels/quant.hpp); owned
// storage only. Its bytes are about a quarter of the float cache's (d_k + 4 per row, not 4 d_k).
// Why head-major, measured (bench_decode's layout/ benchmarks, bench/README.md history): a
// step's attention reads each head's keys and values once; head-major makes that a contiguous
// stream, token-major (llama.cpp's row of all heads, which emha used first) a d_k-float read every
// 2 * kv_dim floats. At kv_dim 512 that stride is 4 KiB, the L1 set-aliasing distance, and the
// cache work of a step at 2048 positions took 1.8x head-major's time. The price, scattered
// appends (2 * kv_heads copies of d_k floats per token instead of one row), is one row per token.
//
// Each sequence has its own length. A forward() with the cache appends shape.seq_q positions to
// sequences 0 .. shape.batch - 1. Prompts of different lengths: prefill them together padded to
// the longest, then truncate() each to its true length (the causal mask kept the padding out of
// the true positions), and decode the batch together.
//
// Sliding window (Config::sliding_window = W <= Capacity): the cache rolls. When n new positions
// do not fit, it first keeps only its last W - 1 rows (moved to the front: one copy of W - 1 rows
// per Capacity - W + 1 appended positions, so at most one row per position when Capacity >= 2W -
// 1, the default 2W), then appends: its bytes depend on W, not on how long the sequence grows.
// A call takes at most Capacity - min(held, W - 1) new positions, held the rows the sequence has
// before it (at least Capacity - W + 1 whatever it holds; a longer prompt is prefilled in chunks).
// Why a compacted window rather than a wrap-around ring: the held keys stay one strided matrix,
// so every attention path (fused, unfused, the decode GEMV, every mask) reads them unchanged;
// a ring would split each head's keys in two at the wrap. Positions stay absolute (RoPE,
// ALiBi). Masks of such a call are laid over its keys, key k being position first_key(b, n) + k.

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "emha/arena.hpp"
#include "emha/attention/config.hpp"
#include "emha/detail/mha_plan.hpp"
#include "emha/status.hpp"

namespace emha {


template <class Config, std::size_t Capacity = detail::kv_default_capacity<Config>(),
          std::size_t Batch = Config::max_batch, ArenaOwnership Own = ArenaOwnership::owned>
class KvCache {
  static_assert(detail::check_config<Config>(), "invalid MhaConfig");
  static_assert(Capacity > 0 && Capacity <= Config::max_seq_kv,
                "KvCache capacity must be between 1 and Config::max_seq_kv");
  static_assert(Batch > 0 && Batch <= Config::max_batch,
                "KvCache batch must be between 1 and Config::max_batch");
  static_assert(Config::head_split == HeadSplit::columns,
                "a KvCache needs head_split columns (flat_view mixes positions)");
  static_assert(Config::kv_cache_type == KvType::f32 || Own == ArenaOwnership::owned,
                "an int8 KvCache owns its storage");

 public:
  using config = Config;
  static constexpr std::size_t capacity = Capacity;  // positions held per sequence
  static constexpr std::size_t max_batch = Batch;    // sequences
  // The sliding window the cache rolls over (Config::sliding_window when it fits the capacity),
  // else 0: the cache holds positions 0 .. Capacity - 1 and refuses more (too_long).
  static constexpr std::size_t window =
      Config::sliding_window > 0 && Config::sliding_window <= Capacity ? Config::sliding_window : 0;
  static constexpr std::size_t kv_dim = detail::mha_dims<Config>().kv_dim();
  static constexpr KvType kv_type = Config::kv_cache_type;
  static constexpr std::size_t row_floats = 2 * kv_dim;  // one position: its K and V, all heads
  static constexpr std::size_t floats = Batch * Capacity * row_floats;  // values (float or int8)
  // int8: the rows' scales, one per position, K/V and K/V head
  static constexpr std::size_t scale_count =
      kv_type == KvType::int8 ? Batch * Capacity * 2 * detail::mha_dims<Config>().kv_heads : 0;
  static constexpr std::size_t bytes =  // the storage, exactly
      kv_type == KvType::int8 ? floats + scale_count * sizeof(float) : floats * sizeof(float);

  // Owned storage.
  KvCache() noexcept {
    static_assert(Own == ArenaOwnership::owned, "pass the storage: this KvCache uses the caller's");
  }
  // The caller's storage of a compile-time size, checked at compile time.
  template <std::size_t N>
  explicit KvCache(float (&storage)[N]) noexcept : storage_{storage} {
    static_assert(Own == ArenaOwnership::caller, "this KvCache owns its storage: use the default constructor");
    static_assert(N >= floats, "KvCache storage smaller than KvCache::floats");
  }
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  // Positions sequence b has seen: its next token's position (0 for b >= max_batch).
  std::size_t length(std::size_t b = 0) const noexcept { return b < Batch ? lengths_[b] : 0; }
  // Position of key 0 of sequence b in a forward() appending n positions: 0, or with a rolling
  // cache its oldest position still held after the call's roll (0 for b >= max_batch).
  std::size_t first_key(std::size_t b, std::size_t n = 0) const noexcept {
    if (b >= Batch) return 0;
    const std::size_t held = lengths_[b] - firsts_[b];
    return lengths_[b] - detail::kv_rows_kept(held, n, Capacity, window);
  }
  // The shape.seq_kv of a forward() appending n positions to sequences 0 .. batch - 1: the most
  // keys any of them then has.
  std::size_t keys(std::size_t n, std::size_t batch = Batch) const noexcept {
    std::size_t most = 0;
    for (std::size_t b = 0; b < batch && b < Batch; ++b) {
      const std::size_t k = lengths_[b] - first_key(b, n) + n;
      most = k > most ? k : most;
    }
    return most;
  }
  // Every sequence empty (the stored floats stay; they are never read past a length).
  void reset() noexcept {
    for (std::size_t b = 0; b < Batch; ++b) lengths_[b] = firsts_[b] = 0;
  }
  // Keep the first n positions of sequence b (speculative decoding's rejected tokens, a beam's
  // rollback, a padded prefill): invalid_argument when b >= max_batch, n > length(b), or (a
  // rolling cache) the window of position n reaches below the oldest position held (n < W - 1 +
  // first_key(b), once the cache has rolled), and nothing changes.
  Status truncate(std::size_t b, std::size_t n) noexcept {
    if (b >= Batch || n > lengths_[b]) return Status::invalid_argument;
    if (firsts_[b] > 0 && n < firsts_[b] + window - 1) return Status::invalid_argument;
    lengths_[b] = n;
    return Status::ok;
  }

  // The size-erased view forward() works on. KvUse::read never writes through it, so a const
  // cache (static K/V shared by decoders) can give one.
  detail::KvCacheView view(detail::KvUse use = detail::KvUse::append) noexcept {
    if constexpr (kv_type == KvType::int8)
      return {nullptr, storage_.data, storage_.scales, lengths_, firsts_, Capacity, Batch, window, use};
    else
      return {storage_.data, nullptr, nullptr, lengths_, firsts_, Capacity, Batch, window, use};
  }
  detail::KvCacheView view_read() const noexcept {
    return const_cast<KvCache&>(*this).view(detail::KvUse::read);
  }

 private:
  struct Owned {
    alignas(64) float data[floats] = {};
  };
  struct OwnedInt8 {
    alignas(64) std::int8_t data[floats] = {};
    alignas(64) float scales[scale_count] = {};
  };
  struct Borrowed {
    float* data;
  };
  using Storage = typename std::conditional<
      Own == ArenaOwnership::owned, typename std::conditional<kv_type == KvType::int8, OwnedInt8, Owned>::type,
      Borrowed>::type;
  Storage storage_{};
  std::size_t lengths_[Batch] = {};
  std::size_t firsts_[Batch] = {};  // position of row 0 (0 until a rolling cache rolls)
};

}  // namespace emha

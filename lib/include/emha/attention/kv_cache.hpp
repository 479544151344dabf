#pragma once
// A fixed-capacity key/value cache for incremental decoding with MultiHeadAttention<Config>:
// projected K and V (after RoPE when the Config has it) of up to Capacity positions for each of
// Batch sequences, in storage whose size is a compile-time constant, owned or the caller's (e.g. a
// buffer in a linker section).
//
// Layout, token-major: sequence b, position p is one row of 2 * kv_dim floats, K | V (all K/V
// heads of the token side by side, as llama.cpp's cache row):
//   data[(b * Capacity + p) * 2 * kv_dim + {0 | kv_dim} + g * d_k ..]
// Why token-major and not head-major [kv_head][p][d_k]: a step appends one contiguous row per new
// token (the projection's K | V row, one copy), and attention reads head g's keys as a strided
// matrix (row stride 2 * kv_dim), which the score GEMM's packing gathers anyway. Head-major would
// make each append kv_heads scattered writes and buy a contiguous read the GEMM does not need.
//
// Each sequence has its own length. A forward() with the cache appends shape.seq_q positions to
// sequences 0 .. shape.batch - 1. Prompts of different lengths: prefill them together padded to
// the longest, then truncate() each to its true length (the causal mask kept the padding out of
// the true positions), and decode the batch together.

#include <cstddef>
#include <type_traits>

#include "emha/arena.hpp"
#include "emha/attention/config.hpp"
#include "emha/attention/mha_plan.hpp"
#include "emha/status.hpp"

namespace emha {

template <class Config, std::size_t Capacity = Config::max_seq_kv,
          std::size_t Batch = Config::max_batch, ArenaOwnership Own = ArenaOwnership::owned>
class KvCache {
  static_assert(detail::check_config<Config>(), "invalid MhaConfig");
  static_assert(Capacity > 0 && Capacity <= Config::max_seq_kv,
                "KvCache capacity must be between 1 and Config::max_seq_kv");
  static_assert(Batch > 0 && Batch <= Config::max_batch,
                "KvCache batch must be between 1 and Config::max_batch");

 public:
  using config = Config;
  static constexpr std::size_t capacity = Capacity;  // positions per sequence
  static constexpr std::size_t max_batch = Batch;    // sequences
  static constexpr std::size_t kv_dim = detail::mha_dims<Config>().kv_dim();
  static constexpr std::size_t row_floats = 2 * kv_dim;  // one position: K | V
  static constexpr std::size_t floats = Batch * Capacity * row_floats;
  static constexpr std::size_t bytes = floats * sizeof(float);  // the storage, exactly

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

  // Positions held by sequence b (0 for b >= max_batch).
  std::size_t length(std::size_t b = 0) const noexcept { return b < Batch ? lengths_[b] : 0; }
  // Every sequence empty (the stored floats stay; they are never read past a length).
  void reset() noexcept {
    for (std::size_t& n : lengths_) n = 0;
  }
  // Keep the first n positions of sequence b (speculative decoding's rejected tokens, a beam's
  // rollback, a padded prefill): invalid_argument when b >= max_batch or n > length(b), and
  // nothing changes.
  Status truncate(std::size_t b, std::size_t n) noexcept {
    if (b >= Batch || n > lengths_[b]) return Status::invalid_argument;
    lengths_[b] = n;
    return Status::ok;
  }

  // The size-erased view forward() works on.
  detail::KvCacheView view() noexcept {
    return {storage_.data, lengths_, Capacity, Batch};
  }

 private:
  struct Owned {
    alignas(64) float data[floats] = {};
  };
  struct Borrowed {
    float* data;
  };
  using Storage = typename std::conditional<Own == ArenaOwnership::owned, Owned, Borrowed>::type;
  Storage storage_{};
  std::size_t lengths_[Batch] = {};
};

}  // namespace emha

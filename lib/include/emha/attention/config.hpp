#pragma once
// Compile-time configuration of a MultiHeadAttention. Derive from MhaConfig and shadow any
// member to change it; members added in later versions come with defaults, so a config written
// today keeps compiling:
//
//   struct Encoder : emha::MhaConfig</*d_model*/ 64, /*heads*/ 4, /*max_seq_q*/ 32> {
//     static constexpr std::size_t max_batch = 2;
//   };

#include <cstddef>

namespace emha {

template <std::size_t DModel, std::size_t Heads, std::size_t MaxSeqQ, std::size_t MaxSeqKv = MaxSeqQ>
struct MhaConfig {
  static constexpr std::size_t d_model = DModel;      // embedding width of query and output
  static constexpr std::size_t heads = Heads;         // d_k = d_model / heads
  static constexpr std::size_t max_seq_q = MaxSeqQ;   // longest query sequence forward() accepts
  static constexpr std::size_t max_seq_kv = MaxSeqKv; // longest key/value sequence
  static constexpr std::size_t kdim = DModel;         // width of key inputs (PyTorch kdim)
  static constexpr std::size_t vdim = DModel;         // width of value inputs (PyTorch vdim)
  static constexpr std::size_t max_batch = 1;         // largest batch forward() accepts
  static constexpr bool bias = true;                  // in_proj_bias and out_proj.bias present
  // Copy the projection weights at set_weights() into the GEMM's panel layout (RAM of
  // MultiHeadAttention::packed_weight_bytes, inside the object): faster, since no call re-packs
  // them. Set false on a microcontroller to read the weights in place (e.g. from flash).
  static constexpr bool prepack_weights = true;
  // forward() may be asked for the attention weights (PyTorch need_weights). That path holds one
  // head's [S_q x S_kv] scores; false leaves only the fused path, whose arena is linear in S_kv.
  static constexpr bool attention_weights = true;
  // Threads forward() may split its work over (emha::port::parallel_for; the posix port's
  // workers are started by the application: emha::port::start_workers). Each brings a scratch
  // slot of its own into the arena; 1 keeps forward() on the caller's thread. Results are
  // bit-identical for every value and every number of running workers.
  static constexpr std::size_t max_threads = 1;
};

namespace detail {

// The sentences a bad config fails to compile with (tests/attention/fail/ proves each).
template <class C>
constexpr bool check_config() {
  static_assert(C::d_model > 0, "d_model must be greater than zero");
  static_assert(C::heads > 0, "heads must be greater than zero");
  static_assert(C::heads == 0 || C::d_model % C::heads == 0, "d_model must be divisible by heads");
  static_assert(C::max_seq_q > 0, "max_seq_q must be greater than zero");
  static_assert(C::max_seq_kv > 0, "max_seq_kv must be greater than zero");
  static_assert(C::kdim > 0, "kdim must be greater than zero");
  static_assert(C::vdim > 0, "vdim must be greater than zero");
  static_assert(C::max_batch > 0, "max_batch must be greater than zero");
  static_assert(C::max_threads > 0, "max_threads must be greater than zero");
  return true;
}

}  // namespace detail
}  // namespace emha

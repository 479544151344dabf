// SPDX-License-Identifier: Apache-2.0
#pragma once
// What a Config (emha/attention/config.hpp) implies at compile time: its checks, and the
// default capacity of its KvCache.

#include <cstddef>
#include "emha/attention/config.hpp"

namespace emha::detail {
// The sentences a bad config fails to compile with (tests/attention/fail/ proves each).
template <class C>
constexpr bool check_config() {
  static_assert(C::d_model > 0, "d_model must be greater than zero");
  static_assert(C::heads > 0, "heads must be greater than zero");
  static_assert(C::heads == 0 || C::head_dim != 0 || C::d_model % C::heads == 0,
                "d_model must be divisible by heads, or head_dim set");
  static_assert(C::kv_heads > 0 && C::kv_heads <= C::heads && C::heads % C::kv_heads == 0,
                "kv_heads must divide heads");
  static_assert(C::max_seq_q > 0, "max_seq_q must be greater than zero");
  static_assert(C::max_seq_kv > 0, "max_seq_kv must be greater than zero");
  static_assert(C::kdim > 0, "kdim must be greater than zero");
  static_assert(C::vdim > 0, "vdim must be greater than zero");
  static_assert(C::max_batch > 0, "max_batch must be greater than zero");
  static_assert(C::max_threads > 0, "max_threads must be greater than zero");
  constexpr std::size_t d_k = C::head_dim != 0 ? C::head_dim : C::heads == 0 ? 0 : C::d_model / C::heads;
  static_assert(d_k > 0, "head_dim must be greater than zero");
  static_assert(C::scale >= 0.0f && C::scale < 3.4e38f, "scale must be finite and not negative (0: 1/sqrt(head_dim))");
  constexpr std::size_t rope_dims = C::rope_dims == 0 ? d_k : C::rope_dims;
  static_assert(C::position != Position::rope || (rope_dims % 2 == 0 && rope_dims <= d_k),
                "rope_dims must be even and at most head_dim");
  static_assert(C::position != Position::rope || C::rope_base > 0.0f, "rope_base must be positive");
  constexpr RopeScalingParams rs = C::rope_scaling;
  static_assert(rs.type == RopeScaling::none || C::position == Position::rope,
                "rope_scaling needs position rope");
  static_assert(rs.type == RopeScaling::none || rs.factor > 0.0f, "rope_scaling's factor must be positive");
  static_assert(rs.type == RopeScaling::none || rs.type == RopeScaling::linear || rs.original_max_positions > 0,
                "rope_scaling needs original_max_positions");
  static_assert(rs.type != RopeScaling::llama3 || (rs.low_freq_factor > 0.0f && rs.high_freq_factor > rs.low_freq_factor),
                "llama3 rope_scaling needs 0 < low_freq_factor < high_freq_factor");
  // longrope's short_factor is not compared with null here: an array's address is no constant
  // expression under the sanitizers. A null one leaves the table unfilled: forward() returns
  // invalid_argument, outputs untouched (test_emha_hpp.cpp).
  static_assert(rs.type != RopeScaling::dynamic || rope_dims > 2, "dynamic rope_scaling needs rope_dims > 2");
  static_assert((rs.type != RopeScaling::dynamic && rs.type != RopeScaling::longrope) ||
                    (C::max_seq_q <= rs.original_max_positions && C::max_seq_kv <= rs.original_max_positions),
                "dynamic and longrope rope_scaling: max_seq_q and max_seq_kv must be at most original_max_positions "
                "(past it transformers recomputes the angles from each call's length)");
  static_assert(C::position != Position::xpos || d_k % 2 == 0, "xpos needs an even head_dim");
  static_assert(C::position != Position::xpos || C::xpos_scale_base > 0.0f,
                "xpos_scale_base must be positive");
  static_assert(C::position != Position::xpos || C::sliding_window == 0,
                "xpos has no sliding window (torchscale's xPos centres every position)");
  static_assert(C::position != Position::relative_bias || C::sliding_window == 0,
                "relative_bias has no sliding window");
  static_assert(C::position != Position::relative_bias ||
                    C::relative_buckets >= (C::relative_bidirectional ? 4u : 2u),
                "relative_buckets must be at least 4 (bidirectional) or 2");
  static_assert(C::position != Position::relative_bias ||
                    C::relative_max_distance > C::relative_buckets / (C::relative_bidirectional ? 4 : 2),
                "relative_max_distance must exceed the exact buckets (relative_buckets / 4 bidirectional, / 2 causal)");
  static_assert(C::attn_logit_softcapping >= 0.0f && C::attn_logit_softcapping < 3.4e38f,
                "attn_logit_softcapping must be finite and not negative (0: none)");
  static_assert(C::norm_eps >= 0.0f, "norm_eps must not be negative");
  static_assert(C::qk_norm_eps >= 0.0f, "qk_norm_eps must not be negative");
  static_assert(C::head_split == HeadSplit::columns || C::position == Position::none,
                "head_split flat_view has no positions (the view mixes them)");
  return true;
}
// A KvCache's default capacity: every position a forward() takes, or with a sliding window W
// twice the window (ExecuTorch's RingKVCache size: a prefill chunk of W never evicts a key its
// own queries need).
template <class Config>
constexpr std::size_t kv_default_capacity() noexcept {
  const std::size_t w = Config::sliding_window;
  return w > 0 && 2 * w < Config::max_seq_kv ? 2 * w : Config::max_seq_kv;
}

}  // namespace emha::detail

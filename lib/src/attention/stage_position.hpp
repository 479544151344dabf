// SPDX-License-Identifier: Apache-2.0
#pragma once
// Stage: positions on the projected Q and K of one sequence (self-attention: query row i and key
// row i are position i), in place in Pass::qkv. ALiBi is not a stage: it is a bias inside each
// score tile (head_attention.hpp).
//   rope: Q and K rotated by the table's angles (HF: after the projections' bias, before the scale)
//   xpos: torchscale's xPos over all N = S positions: Q scaled up, K down (downscale=True); with
//         a cache, centred on its capacity

#include "attention/kernel_set.hpp"
#include "attention/pass.hpp"
#include "attention/return_on_error.hpp"
#include "emha/kernels/rope.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

// With a cache, the new tokens' positions continue the sequence's: K is stored rotated.
template <class K>
[[gnu::noinline]] Status rope_stage(const Pass& s, std::size_t b) noexcept {
  const MhaDims& d = s.d;
  const std::size_t ld = d.qkv_dim(), p0 = cached(s, b);
  EMHA_TRY(K::rope_f32(s.sh.seq_q, d.heads, d.d_k(), d.rope_pairing, p0, s.positions.rope, s.qkv, ld));
  return K::rope_f32(s.new_kv, d.kv_heads, d.d_k(), d.rope_pairing, p0, s.positions.rope, s.qkv + d.proj_col(1),
                     ld);
}

// With a cache, the new tokens' positions continue the sequence's, centred on the cache's
// capacity for good (xpos_centred_f32): K is stored scaled and never rescaled.
template <class K>
[[gnu::noinline]] Status xpos_stage(const Pass& s, std::size_t b) noexcept {
  const MhaDims& d = s.d;
  const std::size_t ld = d.qkv_dim(), sq = s.sh.seq_q, nk = s.new_kv;
  const std::size_t p0 = cached(s, b), centre = s.cache ? s.cache->capacity : sq;
  const RopeTable& t = s.positions.rope;
  EMHA_TRY(xpos_centred_f32(sq, d.heads, d.d_k(), p0, centre, false, d.xpos_scale_base, t, s.qkv, ld));
  return xpos_centred_f32(nk, d.kv_heads, d.d_k(), p0, s.cache ? centre : nk, true, d.xpos_scale_base, t,
                          s.qkv + d.proj_col(1), ld);
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

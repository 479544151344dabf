// SPDX-License-Identifier: Apache-2.0
// The position tables a MultiHeadAttention fills once, in its constructor (compiled once: no
// instruction-set variants): RoPE's and xPos's cos and sin [positions x rope_dims/2] over positions
// 0 .. max(max_seq_q, max_seq_kv) - 1, ALiBi's per-head slopes, or T5's bucket of each distance.
// One function per kind, chosen at compile time (mha_fill_positions in mha_plan.hpp): a layer
// without positions links none of them, nor the libm functions they call (sin, cos, pow, log).

#include "emha/detail/mha_plan.hpp"
#include "emha/kernels/mask.hpp"

namespace emha::detail {

MhaPositions mha_fill_rope(const MhaDims& d, float* storage) noexcept {
  MhaPositions p{};
  const std::size_t n = d.max_positions(), floats = rope_table_floats(n, d.rope_dims);
  // check_config has made rope_dims even, positive and the base positive: this cannot fail.
  if (rope_table_f32(n, d.rope_dims, d.rope_base, storage, storage + floats) == Status::ok)
    p.rope = RopeTable{storage, storage + floats, n, d.rope_dims};
  return p;
}

MhaPositions mha_fill_rope_scaled(const MhaDims& d, float* storage) noexcept {
  MhaPositions p{};
  const std::size_t n = d.max_positions(), floats = rope_table_floats(n, d.rope_dims);
  // check_config has checked the scaling's parameters: this cannot fail.
  if (rope_table_scaled_f32(n, d.rope_dims, d.rope_base, d.rope_scaling, storage, storage + floats) == Status::ok)
    p.rope = RopeTable{storage, storage + floats, n, d.rope_dims};
  return p;
}

MhaPositions mha_fill_alibi(const MhaDims& d, float* storage) noexcept {
  MhaPositions p{};
  if (alibi_slopes(d.heads, storage) == Status::ok) p.alibi_slopes = storage;
  return p;
}

MhaPositions mha_fill_relative(const MhaDims& d, float* storage) noexcept {
  MhaPositions p{};
  // check_config has made the buckets and the distance valid: this cannot fail.
  if (relative_bucket_table_f32(d.relative_buckets, d.relative_max_distance, d.relative_bidirectional,
                                storage) == Status::ok)
    p.relative = RelativeBias{storage, nullptr, d.relative_buckets, d.relative_max_distance, d.heads,
                              d.relative_bidirectional};
  return p;
}

}  // namespace emha::detail

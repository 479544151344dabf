// SPDX-License-Identifier: Apache-2.0
#pragma once
// Which Config field a weight blob's header disagrees with (the format: emha/io/weight_blob.hpp,
// versions 1 to 3), so that emha-run can say more than config_mismatch or weight_type_mismatch: "heads: the blob says 8, this
// build's Config 4". Fields that do not apply (rope_base without RoPE, ...) are not compared, as
// the loader does not compare them.

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "emha/emha.hpp"

namespace emha::run {

struct FieldMismatch {
  const char* field = nullptr;  // null: the header agrees (a tensor's presence or shape differs)
  double blob = 0, config = 0;
};

inline std::uint32_t blob_u32(const unsigned char* blob, std::size_t offset) noexcept {
  return std::uint32_t(blob[offset]) | std::uint32_t(blob[offset + 1]) << 8 |
         std::uint32_t(blob[offset + 2]) << 16 | std::uint32_t(blob[offset + 3]) << 24;
}

inline float blob_f32(const unsigned char* blob, std::size_t offset) noexcept {
  const std::uint32_t bits = blob_u32(blob, offset);
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// The blob's weight type (emha::WeightType: 0 f32, 1 int8): version 3's field, f32 before it.
inline std::uint32_t blob_weight_type(const unsigned char* blob) noexcept {
  return blob_u32(blob, 4) >= 3 ? blob_u32(blob, 140) : 0;
}

inline const char* weight_type_name(std::uint32_t t) noexcept {
  return t == 0 ? "float32" : t == 1 ? "int8" : "unknown";
}

// The first header field of `blob` (at least its version's header bytes) that differs from
// Config C's. A version 1 blob has no fields past 103: they are compared as their defaults.
template <class C>
FieldMismatch first_mismatch(const unsigned char* blob) noexcept {
  constexpr detail::MhaDims d = detail::mha_dims<C>();
  const bool rope = d.position == Position::rope, xpos = d.position == Position::xpos;
  const bool norm = d.norm != NormPlacement::none, qk = d.qk_norm != QkNorm::none;
  const bool rel = d.position == Position::relative_bias, v2 = blob_u32(blob, 4) >= 2;
  const unsigned bias = unsigned(d.bias[0]) | unsigned(d.bias[1]) << 1 | unsigned(d.bias[2]) << 2 |
                        unsigned(d.bias[3]) << 3;
  struct Field {
    const char* name;
    std::size_t offset;
    bool is_float, applies;
    double config;
  };
  const Field fields[] = {
      {"dtype (1 = float32)", 20, false, true, 1},
      {"layout", 24, false, true, 0},
      {"d_model", 28, false, true, double(d.d_model)},
      {"heads", 32, false, true, double(d.heads)},
      {"kv_heads", 36, false, true, double(d.kv_heads)},
      {"kdim", 40, false, true, double(d.kdim)},
      {"vdim", 44, false, true, double(d.vdim)},
      {"bias (bits q, k, v, out)", 48, false, true, double(bias)},
      {"position", 52, false, true, double(d.position)},
      {"rope_pairing", 56, false, rope, double(d.rope_pairing)},
      {"rope_dims", 60, false, rope || xpos, double(d.rope_dims)},
      {"rope_base", 64, true, rope, double(d.rope_base)},
      {"xpos_scale_base", 68, true, xpos, double(d.xpos_scale_base)},
      {"sliding_window", 72, false, true, double(d.window)},
      {"norm", 76, false, true, double(d.norm)},
      {"norm_kind", 80, false, norm, double(d.norm_kind)},
      {"norm_eps", 84, true, norm, double(d.norm_eps)},
      {"norm_affine", 88, false, norm, double(d.norm_affine)},
      {"head_dim", 104, false, v2, double(d.head_dim)},
      // Bytes 104-127 of a version 1 header are zero: no QK-norm, columns. Its position already
      // differs from a relative_bias Config's, so bytes 128-139 (its table) are never read.
      {"qk_norm", 112, false, true, double(d.qk_norm)},
      {"qk_norm_unit_offset", 116, false, qk, double(d.qk_norm_unit_offset)},
      {"qk_norm_eps", 120, true, qk, double(d.qk_norm_eps)},
      {"head_split", 124, false, true, double(d.head_split)},
      {"relative_buckets", 128, false, rel, double(d.relative_buckets)},
      {"relative_max_distance", 132, false, rel, double(d.relative_max_distance)},
      {"relative_bidirectional", 136, false, rel, double(d.relative_bidirectional)},
  };
  for (const Field& f : fields) {
    if (!f.applies) continue;
    const double in_blob = f.is_float ? double(blob_f32(blob, f.offset)) : double(blob_u32(blob, f.offset));
    if (in_blob != f.config) return {f.name, in_blob, f.config};
  }
  // Version 1: head_dim d_model / heads. The scale, compared as the loader does once resolved.
  const std::size_t head_dim = v2 ? blob_u32(blob, 104) : d.d_model / d.heads;
  if (head_dim != d.head_dim) return {"head_dim", double(head_dim), double(d.head_dim)};
  const double in_blob = detail::resolved_scale(v2 ? blob_f32(blob, 108) : 0.0f, head_dim);
  const double config = detail::resolved_scale(d.scale, d.head_dim);
  if (in_blob != config) return {"scale", in_blob, config};
  return {};
}

}  // namespace emha::run

// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the two blob loaders share (weight_blob.cpp: float and W8A32 weights; weight_blob_s8.cpp:
// the full-integer layer): little-endian reads, the header's field offsets (the table in
// emha/io/weight_blob.hpp) and the framing check.

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "emha/span.hpp"
#include "emha/status.hpp"

namespace emha::detail {

inline std::uint32_t u32_at(const unsigned char* p) noexcept {
  return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 | std::uint32_t(p[3]) << 24;
}

inline float f32_at(const unsigned char* p) noexcept {
  const std::uint32_t bits = u32_at(p);
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

enum BlobField : std::size_t {
  f_version = 4, f_total = 8, f_crc = 12, f_header = 16, f_dtype = 20, f_layout = 24, f_d_model = 28,
  f_heads = 32, f_kv_heads = 36, f_kdim = 40, f_vdim = 44, f_bias = 48, f_position = 52,
  f_rope_pairing = 56, f_rope_dims = 60, f_rope_base = 64, f_xpos_scale_base = 68, f_window = 72,
  f_norm = 76, f_norm_kind = 80, f_norm_eps = 84, f_norm_affine = 88, f_count = 92, f_ref_rows = 96,
  f_ref_causal = 100, f_head_dim = 104, f_scale = 108, f_qk_norm = 112, f_qk_unit_offset = 116,
  f_qk_norm_eps = 120, f_head_split = 124, f_rel_buckets = 128, f_rel_max_distance = 132,
  f_rel_bidirectional = 136, f_weight_type = 140, f_arithmetic = 144, f_rounding = 148, f_rope_scaling = 152,
  f_rope_scaling_crc = 156, f_softcap = 160,
};

// Header bytes of a version load_weights() reads (0: none).
std::size_t blob_header_bytes_of(std::uint32_t version) noexcept;

// The framing: magic, version, sizes, alignment, checksum, table bounds. Sets the blob's length.
Status check_blob_frame(Span<const unsigned char> blob, std::size_t& total) noexcept;

}  // namespace emha::detail

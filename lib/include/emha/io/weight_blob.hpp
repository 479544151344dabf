// SPDX-License-Identifier: Apache-2.0
#pragma once
// emha's weight blob: one attention layer's weights with the config they were
// exported for, written by lib/export/emha_export.py, validated in place by load_weights().
// The loader neither copies nor allocates: the MhaWeights it returns point into the caller's
// buffer (a file read into RAM, a memory-mapped file, or flash), which must outlive the layer.
//
// Format, version 2 (version 1 is the same with header_bytes 128 and none of the fields from 104:
// they take their defaults, and load_weights() still reads it). Little-endian; every field a u32
// unless it says f32 (IEEE binary32).
//   offset  field
//        0  magic            the 4 bytes 'E' 'M' 'H' 'A'
//        4  version          2
//        8  total_bytes      size of the whole blob (header, table, tensors, padding)
//       12  crc32            CRC-32 (IEEE 802.3, zlib.crc32) of bytes [16, total_bytes)
//       16  header_bytes     160: offset of the tensor table (128 in version 1)
//       20  dtype            1 = float32
//       24  layout           0 = PyTorch row-major [out_features, in_features]; other values are
//                            reserved for weights already in a target's GEMM panel layout
//       28  d_model   32 heads   36 kv_heads   40 kdim   44 vdim
//       48  bias             bit 0: Q projection has a bias, bit 1: K, bit 2: V, bit 3: output
//       52  position         emha::Position (0 none, 1 rope, 2 xpos, 3 alibi, 4 relative_bias)
//       56  rope_pairing     emha::RopePairing (0 half, 1 interleaved)      rope only
//       60  rope_dims        rotated dims per head, resolved (never 0)       rope and xpos
//       64  rope_base        f32                                             rope only
//       68  xpos_scale_base  f32                                             xpos only
//       72  sliding_window   keys a query keeps, its own included; 0 = all
//       76  norm             emha::NormPlacement (0 none, 1 post, 2 pre, 3 sub)
//       80  norm_kind        emha::NormKind (0 layer_norm, 1 rms_norm)       norm != none
//       84  norm_eps         f32                                             norm != none
//       88  norm_affine      0 or 1                                          norm != none
//       92  tensor_count     entries in the table, at most blob_max_tensors
//       96  ref_rows         rows of the reference tensors (0: none)
//      100  ref_causal       1: the reference output was computed with a causal mask
//      104  head_dim         resolved (never 0)
//      108  scale            f32, Config::scale: 0 = 1/sqrt(head_dim) (compared once resolved)
//      112  qk_norm          emha::QkNorm (0 none, 1 per_head, 2 whole)
//      116  qk_norm_unit_offset  0 or 1                                      qk_norm != none
//      120  qk_norm_eps      f32                                             qk_norm != none
//      124  head_split       emha::HeadSplit (0 columns, 1 flat_view)
//      128  relative_buckets                                                 relative_bias only
//      132  relative_max_distance                                            relative_bias only
//      136  relative_bidirectional  0 or 1                                   relative_bias only
//  140-159  reserved, zero
//      160  tensor table: tensor_count entries of 16 bytes: id, rows, cols, offset
//           tensors: rows * cols float32, row-major, each at an offset (from the blob's first
//           byte) that is a multiple of 64; biases and norm vectors are [rows = n, cols = 1];
//           relative_attention_bias is [relative_buckets, heads]
// A field marked "rope only" (etc.) is written as 0 and not compared where it does not apply.
//
// What load_weights() refuses, each with its own status and `out` untouched:
//   null_pointer     blob.data is null
//   truncated        fewer bytes than the header, or than total_bytes
//   bad_magic        the first 4 bytes are not "EMHA"
//   bad_version      a version this build does not read
//   misaligned       blob.data not 4-byte aligned, or a tensor offset not a multiple of 64
//   bad_checksum     crc32 differs from the bytes
//   bad_format       the table or a tensor outside total_bytes, an unknown or repeated tensor
//                    id, header_bytes not the version's, tensor_count above blob_max_tensors
//   config_mismatch  dtype, layout, a dim or option that differs from the Config, a tensor the
//                    Config needs that is missing, one it does not use, or a shape that differs

#include <cstddef>
#include <cstdint>

#include "emha/detail/mha_plan.hpp"
#include "emha/detail/weight_blob_loader.hpp"
#include "emha/attention/options.hpp"
#include "emha/span.hpp"
#include "emha/status.hpp"

namespace emha {

inline constexpr std::uint32_t blob_version = 2;          // what the exporter writes
inline constexpr std::size_t blob_header_bytes = 160;
inline constexpr std::uint32_t blob_oldest_version = 1;   // the oldest load_weights() reads
inline constexpr std::size_t blob_header_bytes_v1 = 128;
inline constexpr std::size_t blob_entry_bytes = 16;
inline constexpr std::size_t blob_tensor_align = 64;
inline constexpr std::size_t blob_max_tensors = 16;

// Tensor ids of the table. The reference tensors are emha-run's check: a self-attention input
// [ref_rows, d_model] (batch 1) and the output PyTorch computed for it [ref_rows, d_model].
enum class BlobTensor : std::uint32_t {
  in_proj_weight = 1,
  q_proj_weight = 2,
  k_proj_weight = 3,
  v_proj_weight = 4,
  in_proj_bias = 5,
  out_proj_weight = 6,
  out_proj_bias = 7,
  norm_weight = 8,
  norm_bias = 9,
  q_norm_weight = 10,
  k_norm_weight = 11,
  relative_attention_bias = 12,
  ref_input = 16,
  ref_output = 17,
};

// The exporter's reference, when the blob has one (rows == 0 otherwise).
struct BlobReference {
  Span<const float> input;   // [rows, d_model]
  Span<const float> output;  // [rows, d_model]
  std::size_t rows = 0;
  bool causal = false;
};

// Validates `blob` against Config and points `out` (and `reference`, when given) into it.
template <class Config>
Status load_weights(Span<const unsigned char> blob, MhaWeights& out,
                    BlobReference* reference = nullptr) noexcept {
  static_assert(detail::check_config<Config>());
  return detail::load_weight_blob(detail::mha_dims<Config>(), blob, out, reference);
}

}  // namespace emha

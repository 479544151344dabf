// SPDX-License-Identifier: Apache-2.0
#pragma once
// emha's weight blob: one attention layer's weights with the config they were
// exported for, written by lib/export/emha_export.py, validated in place by load_weights().
// The loader neither copies nor allocates: the MhaWeights it returns point into the caller's
// buffer (a file read into RAM, a memory-mapped file, or flash), which must outlive the layer.
//
// Format, version 3. Version 2 is the same without the weight type (bytes 140-143 are zero: float
// weights) and without the int8 tensor ids; version 1 is version 2 with header_bytes 128 and none
// of the fields from 104 (they take their defaults). load_weights() reads all three; the exporter
// writes version 2 for float weights (so that older builds read them) and version 3 for int8.
// Version 4 is the full-integer layer's (Config::arithmetic s8, MhaS8Weights, emha_export.py
// --quantize int8): the same header with arithmetic 1 and the rounding at 144 and 148, the s8
// tensor ids below; of the dims it states d_model, heads, kv_heads, kdim, vdim and head_dim (the
// s8 layer has no positions, norms or windows, and its score scale is in the multipliers).
// Version 5 is version 3 (float or int8 weights, arithmetic 0) with header_bytes 176: a RoPE
// scaling at 152 and 156, the soft cap at 160; the exporter writes it only for a layer with one
// of them, so that an older build refuses such a blob (bad_version) rather than run it without.
// Little-endian; every field a u32 unless it says f32 (IEEE binary32).
//   offset  field
//        0  magic            the 4 bytes 'E' 'M' 'H' 'A'
//        4  version          3 (2 and 1 still read)
//        8  total_bytes      size of the whole blob (header, table, tensors, padding)
//       12  crc32            CRC-32 (IEEE 802.3, zlib.crc32) of bytes [16, total_bytes)
//       16  header_bytes     160: offset of the tensor table (128 in version 1, 176 in 5)
//       20  dtype            1 = float32: the element type of every float tensor (int8 weights:
//                            the weight type at 140)
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
//      140  weight_type      emha::WeightType of the four projections' weights (0 f32, 1 int8);
//                            versions 3 and 5 (versions 1 and 2: f32)
//      144  arithmetic       emha::Arithmetic (0 f32, 1 s8); versions 4 and 5 (5: 0)
//      148  rounding         emha::Rounding (0 double, 1 single); version 4, arithmetic s8
//      152  rope_scaling     emha::RopeScaling (0 none); version 5 only     rope only
//      156  rope_scaling_crc CRC-32 of Config::rope_scaling's parameters as written (the
//                            loader's rope_scaling_crc); version 5, rope_scaling != none
//      160  attn_logit_softcapping  f32, 0 = none; version 5 only
//  164-175  reserved, zero (version 5; 152-159 are zero before it)
// header_bytes  tensor table: tensor_count entries of 16 bytes: id, rows, cols, offset
//           tensors: rows * cols elements, row-major, each at an offset (from the blob's first
//           byte) that is a multiple of 64; biases and norm vectors are [rows = n, cols = 1];
//           relative_attention_bias is [relative_buckets, heads]. The element type is the id's
//           (BlobTensor): int8 for the *_int8 ids, float32 for every other.
// With weight_type int8, each projection's float weight id (1-4, 6) is replaced by its *_int8 id
// (18-22: int8 in [-127, 127], the float tensor's shape [out, in]) and its *_scale id (24-28:
// float32 [out, 1], finite and > 0): weight[j][p] = int8[j][p] * scale[j] (Config::weight_type).
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
//                    id, header_bytes not the version's, tensor_count above blob_max_tensors,
//                    a weight_type that is not 0 or 1, an int8 weight of -128, a scale that is
//                    not finite and > 0
//   weight_type_mismatch  the blob's weight type differs from Config::weight_type (an int8
//                    blob for a float Config, or the reverse), or a tensor of the other
//                    weight type (a float weight in an int8 blob, an *_int8 or *_scale id in a
//                    float blob), or its arithmetic differs from Config::arithmetic (an s8 blob
//                    for a float layer, or the reverse)
//   config_mismatch  dtype, layout, a dim or option that differs from the Config, a tensor the
//                    Config needs that is missing (an int8 weight without its scale, or the
//                    reverse), one it does not use, or a shape that differs (a scale that is
//                    not one per row of its weight)

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "emha/detail/mha_plan.hpp"
#include "emha/detail/mha_s8_plan.hpp"
#include "emha/detail/weight_blob_loader.hpp"
#include "emha/attention/options.hpp"
#include "emha/span.hpp"
#include "emha/status.hpp"

namespace emha {

inline constexpr std::uint32_t blob_version = 5;          // the newest load_weights() reads
inline constexpr std::uint32_t blob_version_f32 = 2;      // what the exporter writes for float weights
inline constexpr std::size_t blob_header_bytes = 160;     // versions 2 to 4
inline constexpr std::size_t blob_header_bytes_v5 = 176;  // version 5: the fields from 152
inline constexpr std::uint32_t blob_oldest_version = 1;   // the oldest load_weights() reads
inline constexpr std::size_t blob_header_bytes_v1 = 128;
inline constexpr std::size_t blob_entry_bytes = 16;
inline constexpr std::size_t blob_tensor_align = 64;
inline constexpr std::size_t blob_max_tensors = 24;

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
  // Version 3, weight_type int8: int8 weights [out, in] and their float scales [out, 1].
  in_proj_weight_int8 = 18,
  q_proj_weight_int8 = 19,
  k_proj_weight_int8 = 20,
  v_proj_weight_int8 = 21,
  out_proj_weight_int8 = 22,
  in_proj_weight_scale = 24,
  q_proj_weight_scale = 25,
  k_proj_weight_scale = 26,
  v_proj_weight_scale = 27,
  out_proj_weight_scale = 28,
  // Version 4, arithmetic s8 (the full-integer layer, MhaS8Weights): the four projections' int8
  // weights are ids 19-22 (q, k, v, out: never in_proj), their int32 biases with the input zero
  // point folded in [rows, 1], their (multiplier, shift) pairs [rows, 2] int32, and the layer's
  // 16 int32 parameters [16, 1]: the zero points of query, key, value, Q, K, V, scores, context
  // and out, then scores (multiplier, shift), softmax (input_multiplier, input_left_shift,
  // diff_min), context (multiplier, shift).
  q_bias_s32 = 32,
  k_bias_s32 = 33,
  v_bias_s32 = 34,
  out_bias_s32 = 35,
  q_multiplier = 36,
  k_multiplier = 37,
  v_multiplier = 38,
  out_multiplier = 39,
  s8_params = 40,
};

// The exporter's reference, when the blob has one (rows == 0 otherwise).
struct BlobReference {
  Span<const float> input;   // [rows, d_model]
  Span<const float> output;  // [rows, d_model]
  std::size_t rows = 0;
  bool causal = false;
};

// Validates `blob` against Config and points `out` (and `reference`, when given) into it: the
// float weight spans for Config::weight_type f32, the *_int8 and *_scale spans for int8.
template <class Config>
Status load_weights(Span<const unsigned char> blob, MhaWeights& out,
                    BlobReference* reference = nullptr) noexcept {
  static_assert(detail::check_config<Config>());
  return detail::load_weight_blob(detail::mha_dims<Config>(), Config::weight_type, blob, out, reference);
}

// The full-integer layer's (Config::arithmetic s8): validates a version 4 blob against Config
// (dims, head_dim, rounding) and points `out` into it; set_weights() then checks the values.
template <class Config, std::enable_if_t<Config::arithmetic == Arithmetic::s8, int> = 0>
Status load_weights(Span<const unsigned char> blob, MhaS8Weights& out) noexcept {
  return detail::load_weight_blob_s8(detail::checked_dims_s8<Config>(), Config::rounding, blob, out);
}

}  // namespace emha

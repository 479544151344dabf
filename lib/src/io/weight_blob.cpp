// SPDX-License-Identifier: Apache-2.0
// load_weight_blob: validates an emha weight blob in the caller's buffer against a Config's dims
// and points MhaWeights into it (the format: emha/io/weight_blob.hpp). Every field is read byte by
// byte (little-endian whatever the host), every size is checked before it is used as an offset,
// and nothing is written to `out` or `reference` unless the whole blob is valid.

#include <cmath>
#include <cstdint>
#include <cstring>

#include "attention/return_on_error.hpp"
#include "emha/io/weight_blob.hpp"
#include "io/blob_fields.hpp"

namespace emha::detail {
namespace {

// The weight type a header states: version 3's field, f32 before it.
std::uint32_t weight_type_of(const unsigned char* p) noexcept {
  return u32_at(p + f_version) >= 3 ? u32_at(p + f_weight_type) : std::uint32_t(WeightType::f32);
}

bool is_int8_id(std::uint32_t id) noexcept {
  return id >= std::uint32_t(BlobTensor::in_proj_weight_int8) && id <= std::uint32_t(BlobTensor::out_proj_weight_int8);
}
bool is_scale_id(std::uint32_t id) noexcept {
  return id >= std::uint32_t(BlobTensor::in_proj_weight_scale) && id <= std::uint32_t(BlobTensor::out_proj_weight_scale);
}
bool is_float_weight_id(std::uint32_t id) noexcept {
  return (id >= std::uint32_t(BlobTensor::in_proj_weight) && id <= std::uint32_t(BlobTensor::v_proj_weight)) ||
         id == std::uint32_t(BlobTensor::out_proj_weight);
}

// The fields from offset 104 (version 2) against the Config's; a version 1 blob has their
// defaults: head_dim d_model / heads, scale 1/sqrt(head_dim), no QK-norm, columns.
bool same_v2_fields(const MhaDims& d, const unsigned char* p, std::uint32_t version) noexcept {
  if (version == 1) {
    const std::size_t head_dim = d.heads ? d.d_model / d.heads : 0;
    return d.head_dim == head_dim && d.d_model == d.heads * head_dim &&
           resolved_scale(d.scale, d.head_dim) == resolved_scale(0.0f, head_dim) && d.qk_norm == QkNorm::none &&
           d.head_split == HeadSplit::columns;
  }
  const std::size_t head_dim = u32_at(p + f_head_dim);
  bool same = head_dim == d.head_dim &&
              resolved_scale(f32_at(p + f_scale), head_dim) == resolved_scale(d.scale, d.head_dim) &&
              u32_at(p + f_qk_norm) == std::uint32_t(d.qk_norm) &&
              u32_at(p + f_head_split) == std::uint32_t(d.head_split);
  if (d.qk_norm != QkNorm::none)
    same = same && f32_at(p + f_qk_norm_eps) == d.qk_norm_eps &&
           u32_at(p + f_qk_unit_offset) == std::uint32_t(d.qk_norm_unit_offset);
  if (d.position == Position::relative_bias)
    same = same && u32_at(p + f_rel_buckets) == d.relative_buckets &&
           u32_at(p + f_rel_max_distance) == d.relative_max_distance &&
           u32_at(p + f_rel_bidirectional) == std::uint32_t(d.relative_bidirectional);
  return same;
}

// CRC-32 of a RoPE scaling's parameters as written in a Config (the exporter's crc() in
// lib/export/emha_export/rope_scaling.py): little-endian type, factor, original_max_positions,
// low_freq_factor, high_freq_factor, beta_fast, beta_slow, truncate, attention_factor (u32 or
// f32 as in RopeScalingParams), then longrope's d_rot/2 short factors (f32).
std::uint32_t rope_scaling_crc(const RopeScalingParams& s, std::size_t d_rot) noexcept {
  unsigned char b[36];
  const auto put_u32 = [&b](std::size_t at, std::uint32_t v) {
    for (int k = 0; k < 4; ++k) b[at + k] = static_cast<unsigned char>(v >> (8 * k));
  };
  const auto put_f32 = [&put_u32](std::size_t at, float v) {
    std::uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    put_u32(at, bits);
  };
  put_u32(0, std::uint32_t(s.type));
  put_f32(4, s.factor);
  put_u32(8, std::uint32_t(s.original_max_positions));
  put_f32(12, s.low_freq_factor);
  put_f32(16, s.high_freq_factor);
  put_f32(20, s.beta_fast);
  put_f32(24, s.beta_slow);
  put_u32(28, std::uint32_t(s.truncate));
  put_f32(32, s.attention_factor);
  std::uint32_t crc = crc32(b, sizeof b);
  for (std::size_t i = 0; s.type == RopeScaling::longrope && s.short_factor && i < d_rot / 2; ++i) {
    put_f32(0, s.short_factor[i]);
    crc = crc32(b, 4, crc);
  }
  return crc;
}

// Version 5's RoPE scaling against the Config's: none before version 5.
bool same_rope_scaling(const MhaDims& d, const unsigned char* p) noexcept {
  const std::uint32_t type = u32_at(p + f_version) >= 5 ? u32_at(p + f_rope_scaling) : 0;
  if (type != std::uint32_t(d.rope_scaling.type)) return false;
  return type == 0 || u32_at(p + f_rope_scaling_crc) == rope_scaling_crc(d.rope_scaling, d.rope_dims);
}

// Every dim and option the blob states against the Config's; fields that do not apply to the
// Config's position or norm are not compared (the exporter writes them as 0).
bool same_config(const MhaDims& d, const unsigned char* p) noexcept {
  const std::uint32_t bias = std::uint32_t(d.bias[0]) | std::uint32_t(d.bias[1]) << 1 |
                             std::uint32_t(d.bias[2]) << 2 | std::uint32_t(d.bias[3]) << 3;
  bool same = u32_at(p + f_dtype) == 1 && u32_at(p + f_layout) == 0 && u32_at(p + f_d_model) == d.d_model &&
              u32_at(p + f_heads) == d.heads && u32_at(p + f_kv_heads) == d.kv_heads &&
              u32_at(p + f_kdim) == d.kdim && u32_at(p + f_vdim) == d.vdim && u32_at(p + f_bias) == bias &&
              u32_at(p + f_position) == std::uint32_t(d.position) && u32_at(p + f_window) == d.window &&
              u32_at(p + f_norm) == std::uint32_t(d.norm);
  if (d.position == Position::rope)
    same = same && u32_at(p + f_rope_pairing) == std::uint32_t(d.rope_pairing) &&
           u32_at(p + f_rope_dims) == d.rope_dims && f32_at(p + f_rope_base) == d.rope_base &&
           same_rope_scaling(d, p);
  if (d.position == Position::xpos)
    same = same && u32_at(p + f_rope_dims) == d.rope_dims && f32_at(p + f_xpos_scale_base) == d.xpos_scale_base;
  if (d.norm != NormPlacement::none)
    same = same && u32_at(p + f_norm_kind) == std::uint32_t(d.norm_kind) &&
           f32_at(p + f_norm_eps) == d.norm_eps && u32_at(p + f_norm_affine) == std::uint32_t(d.norm_affine);
  const float softcap = u32_at(p + f_version) >= 5 ? f32_at(p + f_softcap) : 0.0f;
  return same && softcap == d.softcap && same_v2_fields(d, p, u32_at(p + f_version));
}

// The [rows, cols] a Config needs of tensor `id`; {0, 0} for one it does not use or an unknown id.
// The reference tensors are [ref_rows, d_model] when the blob has a reference.
struct Shape {
  std::size_t rows = 0, cols = 0;
};

// The float weights' shapes, of the Config's weight type only: `weights` is the [out, in] of the
// float or int8 ids, `scales` [out, 1] of the scale ids.
Shape weight_shape(const MhaDims& d, BlobTensor id, bool weights) noexcept {
  if (!weights) return Shape{};
  const bool in_proj = d.same_embed_dim();
  switch (id) {
    case BlobTensor::in_proj_weight: return in_proj ? Shape{d.qkv_dim(), d.d_model} : Shape{};
    case BlobTensor::q_proj_weight: return in_proj ? Shape{} : Shape{d.q_dim(), d.d_model};
    case BlobTensor::k_proj_weight: return in_proj ? Shape{} : Shape{d.kv_dim(), d.kdim};
    case BlobTensor::v_proj_weight: return in_proj ? Shape{} : Shape{d.kv_dim(), d.vdim};
    case BlobTensor::out_proj_weight: return Shape{d.d_model, d.q_dim()};
    default: return Shape{};
  }
}

// The float weight id that an *_int8 or *_scale id stands for.
BlobTensor float_weight_of(std::uint32_t id) noexcept {
  const std::uint32_t i = is_int8_id(id) ? id - std::uint32_t(BlobTensor::in_proj_weight_int8)
                                         : id - std::uint32_t(BlobTensor::in_proj_weight_scale);
  return i == 4 ? BlobTensor::out_proj_weight : BlobTensor(std::uint32_t(BlobTensor::in_proj_weight) + i);
}

Shape expected_shape(const MhaDims& d, bool int8, BlobTensor id, std::size_t ref_rows) noexcept {
  const bool gamma = d.norm != NormPlacement::none && d.norm_affine;
  const std::uint32_t n = std::uint32_t(id);
  if (is_int8_id(n)) return weight_shape(d, float_weight_of(n), int8);
  if (is_scale_id(n)) return Shape{weight_shape(d, float_weight_of(n), int8).rows,
                                   weight_shape(d, float_weight_of(n), int8).rows ? 1u : 0u};
  switch (id) {
    case BlobTensor::in_proj_weight:
    case BlobTensor::q_proj_weight:
    case BlobTensor::k_proj_weight:
    case BlobTensor::v_proj_weight:
    case BlobTensor::out_proj_weight: return weight_shape(d, id, !int8);
    case BlobTensor::in_proj_bias: return d.in_bias_floats() ? Shape{d.in_bias_floats(), 1} : Shape{};
    case BlobTensor::out_proj_bias: return d.bias[3] ? Shape{d.d_model, 1} : Shape{};
    case BlobTensor::norm_weight: return gamma ? Shape{d.norm_dim(), 1} : Shape{};
    case BlobTensor::norm_bias:
      return gamma && d.norm_kind == NormKind::layer_norm ? Shape{d.norm_dim(), 1} : Shape{};
    case BlobTensor::q_norm_weight: return d.q_norm_dim() ? Shape{d.q_norm_dim(), 1} : Shape{};
    case BlobTensor::k_norm_weight: return d.k_norm_dim() ? Shape{d.k_norm_dim(), 1} : Shape{};
    case BlobTensor::relative_attention_bias:
      return d.position == Position::relative_bias ? Shape{d.relative_buckets, d.heads} : Shape{};
    case BlobTensor::ref_input:
    case BlobTensor::ref_output: return ref_rows ? Shape{ref_rows, d.d_model} : Shape{};
    default: return Shape{};
  }
}

// Where an int8 tensor goes; null for any other id.
Span<const std::int8_t>* int8_slot_of(BlobTensor id, MhaWeights& w) noexcept {
  switch (id) {
    case BlobTensor::in_proj_weight_int8: return &w.in_proj_weight_int8;
    case BlobTensor::q_proj_weight_int8: return &w.q_proj_weight_int8;
    case BlobTensor::k_proj_weight_int8: return &w.k_proj_weight_int8;
    case BlobTensor::v_proj_weight_int8: return &w.v_proj_weight_int8;
    case BlobTensor::out_proj_weight_int8: return &w.out_proj_weight_int8;
    default: return nullptr;
  }
}

// Where a float tensor goes; null for an id the format does not define (or an int8 one).
Span<const float>* slot_of(BlobTensor id, MhaWeights& w, BlobReference& r) noexcept {
  switch (id) {
    case BlobTensor::in_proj_weight_scale: return &w.in_proj_weight_scale;
    case BlobTensor::q_proj_weight_scale: return &w.q_proj_weight_scale;
    case BlobTensor::k_proj_weight_scale: return &w.k_proj_weight_scale;
    case BlobTensor::v_proj_weight_scale: return &w.v_proj_weight_scale;
    case BlobTensor::out_proj_weight_scale: return &w.out_proj_weight_scale;
    case BlobTensor::in_proj_weight: return &w.in_proj_weight;
    case BlobTensor::q_proj_weight: return &w.q_proj_weight;
    case BlobTensor::k_proj_weight: return &w.k_proj_weight;
    case BlobTensor::v_proj_weight: return &w.v_proj_weight;
    case BlobTensor::in_proj_bias: return &w.in_proj_bias;
    case BlobTensor::out_proj_weight: return &w.out_proj_weight;
    case BlobTensor::out_proj_bias: return &w.out_proj_bias;
    case BlobTensor::norm_weight: return &w.norm_weight;
    case BlobTensor::norm_bias: return &w.norm_bias;
    case BlobTensor::q_norm_weight: return &w.q_norm_weight;
    case BlobTensor::k_norm_weight: return &w.k_norm_weight;
    case BlobTensor::relative_attention_bias: return &w.relative_attention_bias;
    case BlobTensor::ref_input: return &r.input;
    case BlobTensor::ref_output: return &r.output;
    default: return nullptr;
  }
}

// The values' contract of the int8 scheme: no -128 (the range is symmetric), every scale finite
// and positive.
bool int8_in_range(const std::int8_t* q, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i)
    if (q[i] == -128) return false;
  return true;
}
bool scales_valid(const float* s, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isfinite(s[i]) || !(s[i] > 0.0f)) return false;
  return true;
}

}  // namespace

std::size_t blob_header_bytes_of(std::uint32_t version) noexcept {
  if (version == 5) return blob_header_bytes_v5;
  return version >= 2 && version < 5 ? blob_header_bytes : version == 1 ? blob_header_bytes_v1 : 0;
}

Status check_blob_frame(Span<const unsigned char> blob, std::size_t& total) noexcept {
  const unsigned char* p = blob.data;
  if (p == nullptr) return Status::null_pointer;
  if (blob.size < blob_header_bytes_v1) return Status::truncated;
  if (std::memcmp(p, "EMHA", 4) != 0) return Status::bad_magic;
  const std::size_t header = blob_header_bytes_of(u32_at(p + f_version));
  if (header == 0) return Status::bad_version;
  if (blob.size < header) return Status::truncated;
  total = u32_at(p + f_total);
  if (total > blob.size) return Status::truncated;
  if (total < header) return Status::bad_format;
  if (reinterpret_cast<std::uintptr_t>(p) % alignof(float) != 0) return Status::misaligned;
  if (crc32(p + f_header, total - f_header) != u32_at(p + f_crc)) return Status::bad_checksum;
  if (u32_at(p + f_header) != header) return Status::bad_format;
  const std::size_t count = u32_at(p + f_count);
  if (count > blob_max_tensors || header + count * blob_entry_bytes > total) return Status::bad_format;
  return Status::ok;
}


Status load_weight_blob(const MhaDims& d, WeightType weight_type, Span<const unsigned char> blob,
                        MhaWeights& out, BlobReference* reference) noexcept {
  std::size_t total = 0;
  EMHA_TRY(check_blob_frame(blob, total));
  const unsigned char* p = blob.data;
  if (u32_at(p + f_version) >= 4 && u32_at(p + f_arithmetic) != std::uint32_t(Arithmetic::f32))
    return Status::weight_type_mismatch;  // a full-integer layer's blob (load_weight_blob_s8)
  const std::uint32_t blob_type = weight_type_of(p);
  if (blob_type > std::uint32_t(WeightType::int8)) return Status::bad_format;
  if (blob_type != std::uint32_t(weight_type)) return Status::weight_type_mismatch;
  const bool int8 = weight_type == WeightType::int8;
  if (!same_config(d, p)) return Status::config_mismatch;
  const std::size_t count = u32_at(p + f_count), ref_rows = u32_at(p + f_ref_rows);
  const std::size_t header = blob_header_bytes_of(u32_at(p + f_version));
  const std::size_t data_begin = header + count * blob_entry_bytes;
  MhaWeights w{};
  BlobReference r{};
  constexpr std::uint32_t id_bits = 32;  // every defined id is below 32: `seen` has a bit each
  std::uint32_t seen = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const unsigned char* e = p + header + i * blob_entry_bytes;
    const std::uint32_t id = u32_at(e);
    const std::size_t rows = u32_at(e + 4), cols = u32_at(e + 8), offset = u32_at(e + 12);
    Span<const float>* slot = id < id_bits ? slot_of(BlobTensor(id), w, r) : nullptr;
    Span<const std::int8_t>* slot8 = id < id_bits ? int8_slot_of(BlobTensor(id), w) : nullptr;
    if ((slot == nullptr && slot8 == nullptr) || (seen >> id & 1u)) return Status::bad_format;
    // The int8 ids exist from version 3 on: in an older blob they are unknown.
    if ((is_int8_id(id) || is_scale_id(id)) && u32_at(p + f_version) < 3) return Status::bad_format;
    seen |= 1u << id;
    if (offset % blob_tensor_align != 0) return Status::misaligned;
    // rows * cols * size <= total - offset, without overflow (rows and cols are below 2^32).
    const std::size_t size = slot8 ? sizeof(std::int8_t) : sizeof(float);
    if (offset < data_begin || offset > total || (cols != 0 && rows > (total - offset) / size / cols))
      return Status::bad_format;
    if (int8 ? is_float_weight_id(id) : (is_int8_id(id) || is_scale_id(id))) return Status::weight_type_mismatch;
    const Shape want = expected_shape(d, int8, BlobTensor(id), ref_rows);
    if (want.rows == 0 || rows != want.rows || cols != want.cols) return Status::config_mismatch;
    if (slot8) {
      const auto* q = reinterpret_cast<const std::int8_t*>(p + offset);
      if (!int8_in_range(q, rows * cols)) return Status::bad_format;
      *slot8 = {q, rows * cols};
    } else {
      const auto* f = reinterpret_cast<const float*>(p + offset);
      if (is_scale_id(id) && !scales_valid(f, rows * cols)) return Status::bad_format;
      *slot = {f, rows * cols};
    }
  }
  for (std::uint32_t id = 0; id < id_bits; ++id)  // every tensor the Config needs is there
    if (expected_shape(d, int8, BlobTensor(id), ref_rows).rows != 0 && !(seen >> id & 1u))
      return Status::config_mismatch;
  out = w;
  if (reference) {
    r.rows = ref_rows;
    r.causal = u32_at(p + f_ref_causal) != 0;
    *reference = r;
  }
  return Status::ok;
}

}  // namespace emha::detail

// SPDX-License-Identifier: Apache-2.0
// load_weight_blob: validates an emha weight blob in the caller's buffer against a Config's dims
// and points MhaWeights into it (the format: emha/io/weight_blob.hpp). Every field is read byte by
// byte (little-endian whatever the host), every size is checked before it is used as an offset,
// and nothing is written to `out` or `reference` unless the whole blob is valid.

#include <cstdint>
#include <cstring>

#include "attention/return_on_error.hpp"
#include "emha/io/weight_blob.hpp"

namespace emha::detail {
namespace {

std::uint32_t u32_at(const unsigned char* p) noexcept {
  return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 | std::uint32_t(p[3]) << 24;
}

float f32_at(const unsigned char* p) noexcept {
  const std::uint32_t bits = u32_at(p);
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Header field offsets (the table in weight_blob.hpp).
enum Field : std::size_t {
  f_version = 4, f_total = 8, f_crc = 12, f_header = 16, f_dtype = 20, f_layout = 24, f_d_model = 28,
  f_heads = 32, f_kv_heads = 36, f_kdim = 40, f_vdim = 44, f_bias = 48, f_position = 52,
  f_rope_pairing = 56, f_rope_dims = 60, f_rope_base = 64, f_xpos_scale_base = 68, f_window = 72,
  f_norm = 76, f_norm_kind = 80, f_norm_eps = 84, f_norm_affine = 88, f_count = 92, f_ref_rows = 96,
  f_ref_causal = 100, f_head_dim = 104, f_scale = 108, f_qk_norm = 112, f_qk_unit_offset = 116,
  f_qk_norm_eps = 120, f_head_split = 124, f_rel_buckets = 128, f_rel_max_distance = 132,
  f_rel_bidirectional = 136,
};

// Header bytes of a version load_weights() reads (0: none).
std::size_t header_bytes_of(std::uint32_t version) noexcept {
  return version == blob_version ? blob_header_bytes : version == 1 ? blob_header_bytes_v1 : 0;
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
           u32_at(p + f_rope_dims) == d.rope_dims && f32_at(p + f_rope_base) == d.rope_base;
  if (d.position == Position::xpos)
    same = same && u32_at(p + f_rope_dims) == d.rope_dims && f32_at(p + f_xpos_scale_base) == d.xpos_scale_base;
  if (d.norm != NormPlacement::none)
    same = same && u32_at(p + f_norm_kind) == std::uint32_t(d.norm_kind) &&
           f32_at(p + f_norm_eps) == d.norm_eps && u32_at(p + f_norm_affine) == std::uint32_t(d.norm_affine);
  return same && same_v2_fields(d, p, u32_at(p + f_version));
}

// The [rows, cols] a Config needs of tensor `id`; {0, 0} for one it does not use or an unknown id.
// The reference tensors are [ref_rows, d_model] when the blob has a reference.
struct Shape {
  std::size_t rows = 0, cols = 0;
};

Shape expected_shape(const MhaDims& d, BlobTensor id, std::size_t ref_rows) noexcept {
  const bool in_proj = d.same_embed_dim();
  const bool gamma = d.norm != NormPlacement::none && d.norm_affine;
  switch (id) {
    case BlobTensor::in_proj_weight: return in_proj ? Shape{d.qkv_dim(), d.d_model} : Shape{};
    case BlobTensor::q_proj_weight: return in_proj ? Shape{} : Shape{d.q_dim(), d.d_model};
    case BlobTensor::k_proj_weight: return in_proj ? Shape{} : Shape{d.kv_dim(), d.kdim};
    case BlobTensor::v_proj_weight: return in_proj ? Shape{} : Shape{d.kv_dim(), d.vdim};
    case BlobTensor::in_proj_bias: return d.in_bias_floats() ? Shape{d.in_bias_floats(), 1} : Shape{};
    case BlobTensor::out_proj_weight: return Shape{d.d_model, d.q_dim()};
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
  }
  return Shape{};
}

// Where tensor `id` goes; null for an id the format does not define.
Span<const float>* slot_of(BlobTensor id, MhaWeights& w, BlobReference& r) noexcept {
  switch (id) {
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
  }
  return nullptr;
}

// The framing: magic, version, sizes, alignment, checksum, table bounds. Sets the blob's length.
Status check_frame(Span<const unsigned char> blob, std::size_t& total) noexcept {
  const unsigned char* p = blob.data;
  if (p == nullptr) return Status::null_pointer;
  if (blob.size < blob_header_bytes_v1) return Status::truncated;
  if (std::memcmp(p, "EMHA", 4) != 0) return Status::bad_magic;
  const std::size_t header = header_bytes_of(u32_at(p + f_version));
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

}  // namespace

Status load_weight_blob(const MhaDims& d, Span<const unsigned char> blob, MhaWeights& out,
                        BlobReference* reference) noexcept {
  std::size_t total = 0;
  EMHA_TRY(check_frame(blob, total));
  const unsigned char* p = blob.data;
  if (!same_config(d, p)) return Status::config_mismatch;
  const std::size_t count = u32_at(p + f_count), ref_rows = u32_at(p + f_ref_rows);
  const std::size_t header = header_bytes_of(u32_at(p + f_version));
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
    if (slot == nullptr || (seen >> id & 1u)) return Status::bad_format;
    seen |= 1u << id;
    if (offset % blob_tensor_align != 0) return Status::misaligned;
    // rows * cols * 4 <= total - offset, without overflow (rows and cols are below 2^32).
    if (offset < data_begin || offset > total || (cols != 0 && rows > (total - offset) / sizeof(float) / cols))
      return Status::bad_format;
    const Shape want = expected_shape(d, BlobTensor(id), ref_rows);
    if (want.rows == 0 || rows != want.rows || cols != want.cols) return Status::config_mismatch;
    *slot = {reinterpret_cast<const float*>(p + offset), rows * cols};
  }
  for (std::uint32_t id = 0; id < id_bits; ++id)  // every tensor the Config needs is there
    if (expected_shape(d, BlobTensor(id), ref_rows).rows != 0 && !(seen >> id & 1u)) return Status::config_mismatch;
  out = w;
  if (reference) {
    r.rows = ref_rows;
    r.causal = u32_at(p + f_ref_causal) != 0;
    *reference = r;
  }
  return Status::ok;
}

}  // namespace emha::detail

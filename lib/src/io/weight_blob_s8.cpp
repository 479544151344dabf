// SPDX-License-Identifier: Apache-2.0
// load_weight_blob_s8: validates a version 4 blob (arithmetic s8, the full-integer layer) in the
// caller's buffer against a Config's dims and rounding and points MhaS8Weights into it (the
// format: emha/io/weight_blob.hpp). Every field read byte by byte, every size checked before it
// is used as an offset; `out` written only when the whole blob is valid. The values' own contract
// (no -128 weight, zero points in int8, multipliers in range) is set_weights()'s check.

#include <cstdint>

#include "attention/return_on_error.hpp"
#include "emha/io/weight_blob.hpp"
#include "io/blob_fields.hpp"

namespace emha::detail {
namespace {

constexpr std::uint32_t first_id = std::uint32_t(BlobTensor::q_proj_weight_int8);  // 19
constexpr std::uint32_t last_id = std::uint32_t(BlobTensor::s8_params);            // 40
constexpr std::size_t s8_param_count = 16;

struct Shape {
  std::size_t rows = 0, cols = 0, bytes = 0;  // bytes per element
};

// The shape a Config needs of tensor `id`; rows 0 for an id the s8 layer does not take.
Shape expected(const MhaDims& d, BlobTensor id) noexcept {
  const std::size_t q = d.q_dim(), kv = d.kv_dim();
  switch (id) {
    case BlobTensor::q_proj_weight_int8: return {q, d.d_model, 1};
    case BlobTensor::k_proj_weight_int8: return {kv, d.kdim, 1};
    case BlobTensor::v_proj_weight_int8: return {kv, d.vdim, 1};
    case BlobTensor::out_proj_weight_int8: return {d.d_model, q, 1};
    case BlobTensor::q_bias_s32: return {q, 1, 4};
    case BlobTensor::k_bias_s32:
    case BlobTensor::v_bias_s32: return {kv, 1, 4};
    case BlobTensor::out_bias_s32: return {d.d_model, 1, 4};
    case BlobTensor::q_multiplier: return {q, 2, 4};
    case BlobTensor::k_multiplier:
    case BlobTensor::v_multiplier: return {kv, 2, 4};
    case BlobTensor::out_multiplier: return {d.d_model, 2, 4};
    case BlobTensor::s8_params: return {s8_param_count, 1, 4};
    default: return {};
  }
}

// The projection an id's tensor belongs to (ids 19-22, 32-35, 36-39 in q, k, v, out order).
ProjectionS8& projection_of(std::uint32_t id, MhaS8Weights& w) noexcept {
  const std::uint32_t i = id <= std::uint32_t(BlobTensor::out_proj_weight_int8) ? id - first_id
                          : id <= std::uint32_t(BlobTensor::out_bias_s32) ? id - std::uint32_t(BlobTensor::q_bias_s32)
                                                                          : id - std::uint32_t(BlobTensor::q_multiplier);
  ProjectionS8* p[] = {&w.q, &w.k, &w.v, &w.out};
  return *p[i];
}

// The 16 parameters (little-endian int32) into w.
void read_params(const unsigned char* p, MhaS8Weights& w) noexcept {
  std::int32_t v[s8_param_count];
  for (std::size_t i = 0; i < s8_param_count; ++i) v[i] = static_cast<std::int32_t>(u32_at(p + 4 * i));
  std::int32_t* zero_points[] = {&w.zero_point_query, &w.zero_point_key, &w.zero_point_value,
                                 &w.zero_point_q,     &w.zero_point_k,   &w.zero_point_v,
                                 &w.zero_point_scores, &w.zero_point_context, &w.zero_point_out};
  for (std::size_t i = 0; i < 9; ++i) *zero_points[i] = v[i];
  w.scores = {v[9], v[10]};
  w.softmax = {v[11], v[12], v[13]};
  w.context = {v[14], v[15]};
}

// The dims, head_dim, rounding and arithmetic the blob states against the Config's.
bool same_config(const MhaDims& d, Rounding rounding, const unsigned char* p) noexcept {
  return u32_at(p + f_layout) == 0 && u32_at(p + f_d_model) == d.d_model && u32_at(p + f_heads) == d.heads &&
         u32_at(p + f_kv_heads) == d.kv_heads && u32_at(p + f_kdim) == d.kdim && u32_at(p + f_vdim) == d.vdim &&
         u32_at(p + f_head_dim) == d.head_dim && u32_at(p + f_rounding) == std::uint32_t(rounding);
}

}  // namespace

Status load_weight_blob_s8(const MhaDims& d, Rounding rounding, Span<const unsigned char> blob,
                           MhaS8Weights& out) noexcept {
  std::size_t total = 0;
  EMHA_TRY(check_blob_frame(blob, total));
  const unsigned char* p = blob.data;
  if (u32_at(p + f_version) != 4 || u32_at(p + f_arithmetic) != std::uint32_t(Arithmetic::s8))
    return Status::weight_type_mismatch;  // a float layer's blob (version 5 is a float layer's)
  if (!same_config(d, rounding, p)) return Status::config_mismatch;
  const std::size_t count = u32_at(p + f_count), header = blob_header_bytes;
  const std::size_t data_begin = header + count * blob_entry_bytes;
  MhaS8Weights w{};
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const unsigned char* e = p + header + i * blob_entry_bytes;
    const std::uint32_t id = u32_at(e);
    const std::size_t rows = u32_at(e + 4), cols = u32_at(e + 8), offset = u32_at(e + 12);
    const Shape want = id >= first_id && id <= last_id ? expected(d, BlobTensor(id)) : Shape{};
    if (want.rows == 0 || (seen >> id & 1u)) return Status::bad_format;
    seen |= std::uint64_t(1) << id;
    if (offset % blob_tensor_align != 0) return Status::misaligned;
    if (offset < data_begin || offset > total || (cols != 0 && rows > (total - offset) / want.bytes / cols))
      return Status::bad_format;
    if (rows != want.rows || cols != want.cols) return Status::config_mismatch;
    const unsigned char* t = p + offset;  // 64-byte aligned in a 4-byte aligned blob
    if (id == std::uint32_t(BlobTensor::s8_params)) {
      read_params(t, w);
    } else if (id <= std::uint32_t(BlobTensor::out_proj_weight_int8)) {
      projection_of(id, w).weight = {reinterpret_cast<const std::int8_t*>(t), rows * cols};
    } else if (id <= std::uint32_t(BlobTensor::out_bias_s32)) {
      projection_of(id, w).bias = {reinterpret_cast<const std::int32_t*>(t), rows};
    } else {  // QuantizedMultiplier is two int32: {multiplier, shift}
      static_assert(sizeof(QuantizedMultiplier) == 8 && alignof(QuantizedMultiplier) == 4);
      projection_of(id, w).multiplier = {reinterpret_cast<const QuantizedMultiplier*>(t), rows};
    }
  }
  for (std::uint32_t id = first_id; id <= last_id; ++id)  // every tensor the layer needs is there
    if (expected(d, BlobTensor(id)).rows != 0 && !(seen >> id & 1u)) return Status::config_mismatch;
  out = w;
  return Status::ok;
}

}  // namespace emha::detail

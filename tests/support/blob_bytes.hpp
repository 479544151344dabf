// SPDX-License-Identifier: Apache-2.0
#pragma once
// A weight blob built byte by byte from the format's table (emha/io/weight_blob.hpp), for the
// loader's tests and the fuzz target's seeds: independent of the library (its own CRC-32, the
// offsets as literal numbers), so that a loader that misreads the format fails against it.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "support/numeric.hpp"

namespace emha::test {

// Bitwise CRC-32 (IEEE, reflected 0xEDB88320): zlib.crc32.
inline std::uint32_t crc32_bitwise(const unsigned char* p, std::size_t n) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
  }
  return c ^ 0xFFFFFFFFu;
}

struct BlobTensorSpec {
  std::uint32_t id, rows, cols;
};

// Ids 18-22 are int8 weights (version 3), 24-28 their float scales; every other id is float32.
inline bool is_int8_id(std::uint32_t id) { return id >= 18 && id <= 22; }
inline bool is_scale_id(std::uint32_t id) { return id >= 24 && id <= 28; }

struct BlobBytes {
  std::vector<unsigned char> bytes;
  std::size_t header = 160;  // the table's offset: 160 (version 2), 128 (version 1)

  void put(std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes[at + i] = static_cast<unsigned char>(v >> (8 * i));
  }
  void put_f(std::size_t at, float f) {
    std::uint32_t v;
    std::memcpy(&v, &f, 4);
    put(at, v);
  }
  std::uint32_t get(std::size_t at) const {
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= std::uint32_t(bytes[at + i]) << (8 * i);
    return v;
  }
  // After an edit: the CRC of bytes [16, total) again (a blob whose only defect is the edit).
  void reseal() { put(12, crc32_bitwise(bytes.data() + 16, get(8) - 16)); }
  // Table entry i's field f (0 id, 1 rows, 2 cols, 3 offset).
  std::size_t entry(std::size_t i, std::size_t f) const { return header + 16 * i + 4 * f; }
  const float* tensor(std::size_t i) const {
    return reinterpret_cast<const float*>(bytes.data() + get(entry(i, 3)));
  }
  const std::int8_t* tensor_int8(std::size_t i) const {
    return reinterpret_cast<const std::int8_t*>(bytes.data() + get(entry(i, 3)));
  }
};

// The header fields a test sets (offsets of weight_blob.hpp); the rest stay 0.
struct BlobHeader {
  std::uint32_t d_model, heads, kv_heads, kdim, vdim, bias;
  std::uint32_t position = 0, rope_pairing = 0, rope_dims = 0;
  float rope_base = 0, xpos_scale_base = 0;
  std::uint32_t window = 0, norm = 0, norm_kind = 0;
  float norm_eps = 0;
  std::uint32_t norm_affine = 0, ref_rows = 0, ref_causal = 0;
  std::uint32_t version = 2;  // 1: the 128-byte header, without the fields below; 3: weight_type
  std::uint32_t head_dim = 0;  // 0: d_model / heads
  float scale = 0;
  std::uint32_t qk_norm = 0, qk_norm_unit_offset = 0;
  float qk_norm_eps = 0;
  std::uint32_t head_split = 0, relative_buckets = 0, relative_max_distance = 0, relative_bidirectional = 0;
  std::uint32_t weight_type = 0;  // version 3: 0 f32, 1 int8
};

// Tensor i holds uniform values in [-0.2, 0.2) from seed 100 + i, 64-byte aligned; an int8 tensor
// the integers -127 .. 127 in turn from 100 + i, a scale tensor uniform values in [0.001, 0.01).
inline BlobBytes make_blob(const BlobHeader& h, const std::vector<BlobTensorSpec>& tensors) {
  const std::size_t header = h.version == 1 ? 128 : 160;
  std::size_t at = header + 16 * tensors.size();
  std::vector<std::size_t> offsets;
  for (const BlobTensorSpec& t : tensors) {
    at = (at + 63) / 64 * 64;
    offsets.push_back(at);
    at += std::size_t(t.rows) * t.cols * (is_int8_id(t.id) ? 1 : 4);
  }
  BlobBytes b;
  b.header = header;
  b.bytes.assign((at + 63) / 64 * 64, 0);
  std::memcpy(b.bytes.data(), "EMHA", 4);
  b.put(4, h.version);
  b.put(8, std::uint32_t(b.bytes.size()));
  b.put(16, std::uint32_t(header));
  b.put(20, 1);
  const std::uint32_t dims[] = {h.d_model, h.heads, h.kv_heads, h.kdim, h.vdim, h.bias, h.position, h.rope_pairing,
                                h.rope_dims};
  for (std::size_t i = 0; i < 9; ++i) b.put(28 + 4 * i, dims[i]);
  b.put_f(64, h.rope_base);
  b.put_f(68, h.xpos_scale_base);
  b.put(72, h.window);
  b.put(76, h.norm);
  b.put(80, h.norm_kind);
  b.put_f(84, h.norm_eps);
  b.put(88, h.norm_affine);
  b.put(92, std::uint32_t(tensors.size()));
  b.put(96, h.ref_rows);
  b.put(100, h.ref_causal);
  if (h.version != 1) {
    b.put(104, h.head_dim != 0 ? h.head_dim : h.d_model / h.heads);
    b.put_f(108, h.scale);
    b.put(112, h.qk_norm);
    b.put(116, h.qk_norm_unit_offset);
    b.put_f(120, h.qk_norm_eps);
    b.put(124, h.head_split);
    b.put(128, h.relative_buckets);
    b.put(132, h.relative_max_distance);
    b.put(136, h.relative_bidirectional);
  }
  if (h.version >= 3) b.put(140, h.weight_type);
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const BlobTensorSpec& t = tensors[i];
    b.put(b.entry(i, 0), t.id);
    b.put(b.entry(i, 1), t.rows);
    b.put(b.entry(i, 2), t.cols);
    b.put(b.entry(i, 3), std::uint32_t(offsets[i]));
    const std::size_t n = std::size_t(t.rows) * t.cols;
    if (is_int8_id(t.id)) {
      for (std::size_t j = 0; j < n; ++j)
        b.bytes[offsets[i] + j] = static_cast<unsigned char>(static_cast<std::int8_t>(int((100 + i + j) % 255) - 127));
      continue;
    }
    std::vector<float> v(n);
    fill_uniform(v.data(), v.size(), 100 + i, is_scale_id(t.id) ? 0.001f : -0.2f, is_scale_id(t.id) ? 0.01f : 0.2f);
    std::memcpy(b.bytes.data() + offsets[i], v.data(), v.size() * 4);
  }
  b.reseal();
  return b;
}

}  // namespace emha::test

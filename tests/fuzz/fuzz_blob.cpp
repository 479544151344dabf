// SPDX-License-Identifier: Apache-2.0
// libFuzzer target (clang, ASan + UBSan): the weight blob loader, load_weights, on
// three Configs (nn.MultiheadAttention's layout; GQA with kdim/vdim, RoPE and a norm;
// nn.MultiheadAttention(16, 2) with int8 weights, blob version 3). Asserts the loader's contract
// (emha/io/weight_blob.hpp):
//   - the status is ok or one of the loader's documented errors;
//   - on an error MhaWeights and the reference keep every bit;
//   - on ok every span lies inside the blob and set_weights accepts the weights (float Configs;
//     an int8 Config's spans are checked for size, -128 and scales > 0);
//   - nothing is read outside the blob (ASan: each blob sits in a heap block of its exact size).
// Input: byte 0 selects the Config (bit 4: the int8 one, else bit 0) and the mode (bit 1: the rest
// is a whole blob; else
// the rest patches a valid blob of that Config: pairs of (offset u16, byte), then, with bit 2, a
// truncation length u16 at the end). Bit 3 re-seals the CRC after patching, so that mutations
// reach the checks behind the checksum.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "emha/emha.hpp"
#include "support/blob_bytes.hpp"

namespace {

using emha::Status;

struct Plain : emha::MhaConfig<32, 4, 8> {};
struct Gqa : emha::MhaConfig<32, 4, 8> {
  static constexpr std::size_t kv_heads = 2, kdim = 24, vdim = 40;
  static constexpr bool bias = false;
  static constexpr emha::Position position = emha::Position::rope;
  static constexpr emha::NormPlacement norm = emha::NormPlacement::pre;
  static constexpr emha::NormKind norm_kind = emha::NormKind::rms_norm;
};
struct Int8 : emha::MhaConfig<16, 2, 8> {
  static constexpr emha::WeightType weight_type = emha::WeightType::int8;
};

const emha::test::BlobBytes& base(bool gqa) {
  static const emha::test::BlobBytes plain = emha::test::make_blob(
      {32, 4, 4, 32, 32, 0xF, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 1},
      {{1, 96, 32}, {5, 96, 1}, {6, 32, 32}, {7, 32, 1}, {16, 3, 32}, {17, 3, 32}});
  static const emha::test::BlobBytes grouped = emha::test::make_blob(
      {32, 4, 2, 24, 40, 0, 1, 0, 8, 10000.0f, 0, 0, 2, 1, 1e-5f, 1},
      {{2, 32, 32}, {3, 16, 24}, {4, 16, 40}, {6, 32, 32}, {8, 32, 1}});
  return gqa ? grouped : plain;
}

const emha::test::BlobBytes& base_int8() {
  static const emha::test::BlobBytes b = [] {
    emha::test::BlobHeader h{16, 2, 2, 16, 16, 0xF};
    h.version = 3;
    h.weight_type = 1;
    h.ref_rows = 2;
    return emha::test::make_blob(h, {{5, 48, 1}, {7, 16, 1}, {16, 2, 16}, {17, 2, 16}, {18, 48, 16}, {22, 16, 16},
                                     {24, 48, 1}, {28, 16, 1}});
  }();
  return b;
}

[[noreturn]] void breach(const char* what) {
  std::fprintf(stderr, "emha contract breach: %s\n", what);
  std::abort();
}
void require(bool ok, const char* what) {
  if (!ok) breach(what);
}

template <class T>
bool inside(emha::Span<const T> s, const unsigned char* p, std::size_t n) {
  if (s.data == nullptr) return s.size == 0;
  const auto* b = reinterpret_cast<const unsigned char*>(s.data);
  return b >= p && s.size <= n / sizeof(T) && b + s.size * sizeof(T) <= p + n &&
         reinterpret_cast<std::uintptr_t>(b) % alignof(T) == 0;
}

template <class C>
void check(const unsigned char* p, std::size_t n) {
  static const float sentinel[1] = {1.0f};
  emha::MhaWeights w;
  w.norm_bias = {sentinel, 1};
  emha::BlobReference r;
  r.rows = 777;
  const Status s = emha::load_weights<C>({p, n}, w, &r);
  switch (s) {
    case Status::ok: break;
    case Status::null_pointer:
    case Status::truncated:
    case Status::bad_magic:
    case Status::bad_version:
    case Status::misaligned:
    case Status::bad_checksum:
    case Status::bad_format:
    case Status::config_mismatch:
    case Status::weight_type_mismatch:
      require(w.norm_bias.data == sentinel && w.in_proj_weight.data == nullptr &&
                  w.in_proj_weight_int8.data == nullptr && w.in_proj_weight_scale.data == nullptr && r.rows == 777,
              "an error changed the outputs");
      return;
    default: breach("a status the loader does not document");
  }
  const emha::Span<const float> all[] = {w.in_proj_weight, w.q_proj_weight, w.k_proj_weight, w.v_proj_weight,
                                         w.in_proj_bias,   w.out_proj_weight, w.out_proj_bias, w.norm_weight,
                                         w.norm_bias,      r.input,           r.output};
  for (const auto& s2 : all) require(inside(s2, p, n), "a span outside the blob");
  require(r.input.size == r.rows * C::d_model && r.output.size == r.input.size, "a reference of the wrong size");
  if constexpr (C::weight_type == emha::WeightType::int8) {
    const emha::Span<const float> scales[] = {w.in_proj_weight_scale, w.q_proj_weight_scale, w.k_proj_weight_scale,
                                              w.v_proj_weight_scale, w.out_proj_weight_scale};
    const emha::Span<const std::int8_t> weights[] = {w.in_proj_weight_int8, w.q_proj_weight_int8,
                                                     w.k_proj_weight_int8, w.v_proj_weight_int8,
                                                     w.out_proj_weight_int8};
    for (const auto& s2 : scales) {
      require(inside(s2, p, n), "a scale outside the blob");
      for (std::size_t i = 0; i < s2.size; ++i) require(s2.data[i] > 0.0f, "a scale not > 0");
    }
    for (const auto& s2 : weights) {
      require(inside(s2, p, n), "an int8 weight outside the blob");
      for (std::size_t i = 0; i < s2.size; ++i) require(s2.data[i] != -128, "an int8 weight of -128");
    }
    require(w.in_proj_weight_int8.size == 48 * 16 && w.in_proj_weight_scale.size == 48 &&
                w.out_proj_weight_int8.size == 16 * 16 && w.out_proj_weight_scale.size == 16 &&
                w.in_proj_weight.data == nullptr && w.out_proj_weight.data == nullptr,
            "int8 spans of the wrong size, or float weights with int8");
  } else {
    static emha::MultiHeadAttention<C> mha;
    require(mha.set_weights(w) == Status::ok, "set_weights refused loaded weights");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const unsigned mode = data[0];
  const bool gqa = mode & 1u, int8 = mode & 16u;
  emha::test::BlobBytes b;
  if (mode & 2u) {
    b.bytes.assign(data + 1, data + size);
  } else {
    b = int8 ? base_int8() : base(gqa);
    std::size_t end = size;
    if ((mode & 4u) && size >= 3) {
      end = size - 2;
      const std::size_t cut = std::size_t(data[end]) | std::size_t(data[end + 1]) << 8;
      if (cut < b.bytes.size()) b.bytes.resize(cut);
    }
    for (std::size_t i = 1; i + 3 <= end; i += 3) {
      const std::size_t at = std::size_t(data[i]) | std::size_t(data[i + 1]) << 8;
      if (at < b.bytes.size()) b.bytes[at] = data[i + 2];
    }
    if ((mode & 8u) && b.bytes.size() >= 16) {
      const std::uint32_t total = b.get(8);
      if (total >= 16 && total <= b.bytes.size())
        b.put(12, emha::test::crc32_bitwise(b.bytes.data() + 16, total - 16));
    }
  }
  // An exact-size heap block: ASan reports any read past its end.
  const std::size_t n = b.bytes.size();
  std::unique_ptr<unsigned char[]> blob(new unsigned char[n ? n : 1]);
  if (n) std::memcpy(blob.get(), b.bytes.data(), n);
  if (int8)
    check<Int8>(blob.get(), n);
  else if (gqa)
    check<Gqa>(blob.get(), n);
  else
    check<Plain>(blob.get(), n);
  return 0;
}

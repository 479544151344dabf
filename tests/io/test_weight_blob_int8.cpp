// SPDX-License-Identifier: Apache-2.0
// Version 3 of the weight blob (emha/io/weight_blob.hpp): int8 weights with their float scales,
// against blobs built byte by byte (tests/support/blob_bytes.hpp). A valid blob fills the *_int8
// and *_scale spans in place and leaves the float weight spans empty; each defect returns its own
// status with MhaWeights and the reference untouched. The exporter's int8 blob: tests/export.

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "emha/emha.hpp"
#include "support/blob_bytes.hpp"

namespace {

using emha::Status;
using emha::test::BlobBytes;
using emha::test::BlobHeader;
using emha::test::BlobTensorSpec;

// nn.MultiheadAttention(32, 4) with int8 weights: in_proj [96, 32] + scale [96] + bias, out_proj
// [32, 32] + scale [32] + bias.
struct Plain : emha::MhaConfig<32, 4, 8> {};
struct Plain8 : Plain {
  static constexpr emha::WeightType weight_type = emha::WeightType::int8;
};
// Separate projections (kdim 24, vdim 40), no bias, int8.
struct Kv8 : emha::MhaConfig<32, 4, 8> {
  static constexpr std::size_t kdim = 24, vdim = 40;
  static constexpr bool bias = false;
  static constexpr emha::WeightType weight_type = emha::WeightType::int8;
};

BlobHeader int8_header() {
  BlobHeader h{32, 4, 4, 32, 32, 0xF};
  h.version = 3;
  h.weight_type = 1;
  return h;
}
const std::vector<BlobTensorSpec> int8_tensors{{5, 96, 1}, {7, 32, 1}, {18, 96, 32}, {22, 32, 32}, {24, 96, 1}, {28, 32, 1}};
const std::vector<BlobTensorSpec> float_tensors{{1, 96, 32}, {5, 96, 1}, {6, 32, 32}, {7, 32, 1}};

emha::Span<const unsigned char> span_of(const BlobBytes& b) { return {b.bytes.data(), b.bytes.size()}; }

// The status of loading `b` as Config C; checks that `out` and the reference are untouched unless ok.
template <class C>
Status load(const BlobBytes& b) {
  static const std::int8_t sentinel[1] = {0};
  emha::MhaWeights w;
  w.out_proj_weight_int8 = {sentinel, 1};
  emha::BlobReference r;
  r.rows = 12345;
  const Status s = emha::load_weights<C>(span_of(b), w, &r);
  if (s != Status::ok) {
    CHECK(w.out_proj_weight_int8.data == sentinel);
    CHECK(w.in_proj_weight_int8.data == nullptr);
    CHECK(w.in_proj_weight_scale.data == nullptr);
    CHECK(r.rows == 12345);
  }
  return s;
}

// `b` with table entry `i`'s field `f` set to `v`, resealed.
BlobBytes with_entry(BlobBytes b, std::size_t i, std::size_t f, std::uint32_t v) {
  b.put(b.entry(i, f), v);
  b.reseal();
  return b;
}

}  // namespace

TEST_CASE("an int8 blob (version 3) fills the int8 and scale spans in place, the float ones stay empty") {
  const BlobBytes b = emha::test::make_blob(int8_header(), int8_tensors);
  emha::MhaWeights w;
  REQUIRE(emha::load_weights<Plain8>(span_of(b), w) == Status::ok);
  CHECK(w.in_proj_bias.data == b.tensor(0));
  CHECK(w.out_proj_bias.data == b.tensor(1));
  CHECK(w.in_proj_weight_int8.data == b.tensor_int8(2));
  CHECK(w.in_proj_weight_int8.size == 96 * 32);
  CHECK(w.out_proj_weight_int8.data == b.tensor_int8(3));
  CHECK(w.out_proj_weight_int8.size == 32 * 32);
  CHECK(w.in_proj_weight_scale.data == b.tensor(4));
  CHECK(w.in_proj_weight_scale.size == 96);
  CHECK(w.out_proj_weight_scale.data == b.tensor(5));
  CHECK(w.out_proj_weight_scale.size == 32);
  CHECK(w.in_proj_weight.data == nullptr);
  CHECK(w.out_proj_weight.data == nullptr);
  CHECK(w.q_proj_weight_int8.data == nullptr);
  // The bytes are the writer's: -127 .. 127 in turn.
  CHECK(w.in_proj_weight_int8.data[0] == std::int8_t(int(102 % 255) - 127));
  CHECK(w.in_proj_weight_scale.data[0] > 0.0f);

  const BlobBytes kv = emha::test::make_blob(
      [] {
        BlobHeader h{32, 4, 4, 24, 40, 0};
        h.version = 3;
        h.weight_type = 1;
        return h;
      }(),
      {{19, 32, 32}, {20, 32, 24}, {21, 32, 40}, {22, 32, 32}, {25, 32, 1}, {26, 32, 1}, {27, 32, 1}, {28, 32, 1}});
  REQUIRE(emha::load_weights<Kv8>(span_of(kv), w) == Status::ok);
  CHECK(w.q_proj_weight_int8.data == kv.tensor_int8(0));
  CHECK(w.k_proj_weight_int8.size == 32 * 24);
  CHECK(w.v_proj_weight_int8.size == 32 * 40);
  CHECK(w.v_proj_weight_scale.data == kv.tensor(6));
  CHECK(w.in_proj_weight_int8.data == nullptr);
}

TEST_CASE("the weight type: an int8 blob for a float Config and the reverse, each refused") {
  using emha::test::make_blob;
  const BlobHeader h8 = int8_header();
  const BlobHeader h32{32, 4, 4, 32, 32, 0xF};
  CHECK(load<Plain>(make_blob(h8, int8_tensors)) == Status::weight_type_mismatch);
  CHECK(load<Plain8>(make_blob(h32, float_tensors)) == Status::weight_type_mismatch);  // version 2
  BlobHeader v1 = h32;
  v1.version = 1;
  CHECK(load<Plain8>(make_blob(v1, float_tensors)) == Status::weight_type_mismatch);
  BlobHeader v3f = h8;
  v3f.weight_type = 0;  // version 3, float weights: loads as a float Config
  CHECK(load<Plain>(make_blob(v3f, float_tensors)) == Status::ok);
  CHECK(load<Plain8>(make_blob(v3f, float_tensors)) == Status::weight_type_mismatch);
  CHECK(load<Plain>(make_blob(v3f, int8_tensors)) == Status::weight_type_mismatch);  // int8 ids, f32 header
  BlobHeader bad = h8;
  bad.weight_type = 2;
  CHECK(load<Plain8>(make_blob(bad, int8_tensors)) == Status::bad_format);
  // A float weight inside an int8 blob; an int8 id in a version 2 blob (unknown there).
  CHECK(load<Plain8>(make_blob(h8, {{1, 96, 32}, {5, 96, 1}, {7, 32, 1}, {22, 32, 32}, {28, 32, 1}})) ==
        Status::weight_type_mismatch);
  CHECK(load<Plain>(make_blob(h32, {{5, 96, 1}, {6, 32, 32}, {7, 32, 1}, {18, 96, 32}, {24, 96, 1}})) ==
        Status::bad_format);
}

TEST_CASE("int8 tensors: a missing scale, wrong counts, -128, a scale not finite and > 0") {
  using emha::test::make_blob;
  const BlobHeader h = int8_header();
  // A weight without its scale, a scale without its weight.
  CHECK(load<Plain8>(make_blob(h, {{5, 96, 1}, {7, 32, 1}, {18, 96, 32}, {22, 32, 32}, {28, 32, 1}})) ==
        Status::config_mismatch);
  CHECK(load<Plain8>(make_blob(h, {{5, 96, 1}, {7, 32, 1}, {22, 32, 32}, {24, 96, 1}, {28, 32, 1}})) ==
        Status::config_mismatch);
  // Wrong counts: a scale per column, a scale [96, 2], a transposed weight, separate projections
  // for a Config with one in_proj.
  CHECK(load<Plain8>(make_blob(h, {{5, 96, 1}, {7, 32, 1}, {18, 96, 32}, {22, 32, 32}, {24, 32, 1}, {28, 32, 1}})) ==
        Status::config_mismatch);
  CHECK(load<Plain8>(make_blob(h, {{5, 96, 1}, {7, 32, 1}, {18, 96, 32}, {22, 32, 32}, {24, 96, 2}, {28, 32, 1}})) ==
        Status::config_mismatch);
  CHECK(load<Plain8>(make_blob(h, {{5, 96, 1}, {7, 32, 1}, {18, 32, 96}, {22, 32, 32}, {24, 96, 1}, {28, 32, 1}})) ==
        Status::config_mismatch);
  CHECK(load<Plain8>(make_blob(h, {{5, 96, 1}, {7, 32, 1}, {19, 32, 32}, {22, 32, 32}, {25, 32, 1}, {28, 32, 1}})) ==
        Status::config_mismatch);

  const BlobBytes good = make_blob(h, int8_tensors);
  REQUIRE(load<Plain8>(good) == Status::ok);
  const std::size_t q_at = good.get(good.entry(2, 3)), s_at = good.get(good.entry(4, 3));
  SUBCASE("-128 in a weight") {
    BlobBytes b = good;
    b.bytes[q_at + 77] = 0x80;
    b.reseal();
    CHECK(load<Plain8>(b) == Status::bad_format);
    b.bytes[q_at + 77] = 0x81;  // -127: in range
    b.reseal();
    CHECK(load<Plain8>(b) == Status::ok);
  }
  SUBCASE("a scale of 0, below 0, inf, NaN") {
    for (const float bad : {0.0f, -0.5f, -0.0f, std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN()}) {
      BlobBytes b = good;
      b.put_f(s_at + 4 * 95, bad);
      b.reseal();
      CHECK(load<Plain8>(b) == Status::bad_format);
    }
  }
}

TEST_CASE("int8 tensors in the frame: misaligned, truncated, past the end, the checksum, repeated") {
  const BlobBytes good = emha::test::make_blob(int8_header(), int8_tensors);
  const std::uint32_t q_at = good.get(good.entry(2, 3));
  CHECK(load<Plain8>(with_entry(good, 2, 3, q_at + 1)) == Status::misaligned);
  CHECK(load<Plain8>(with_entry(good, 2, 1, 0x40000000u)) == Status::bad_format);  // rows past the end
  CHECK(load<Plain8>(with_entry(good, 3, 0, 18)) == Status::bad_format);          // id 18 twice
  CHECK(load<Plain8>(with_entry(good, 3, 0, 23)) == Status::bad_format);          // no id 23
  // The last int8 byte of in_proj lies inside the blob; an int8 tensor one byte longer than the
  // blob's end is refused (sizes are counted in bytes, not floats).
  BlobBytes cut = good;
  cut.put(8, std::uint32_t(good.get(good.entry(5, 3)) + 4 * 31));  // total ends inside out_proj's scale
  cut.reseal();
  CHECK(load<Plain8>(cut) == Status::bad_format);
  CHECK(load<Plain8>(BlobBytes{{good.bytes.begin(), good.bytes.end() - 1}, 160}) == Status::truncated);
  BlobBytes flipped = good;
  flipped.bytes[q_at + 5] ^= 1;
  CHECK(load<Plain8>(flipped) == Status::bad_checksum);
}

// SPDX-License-Identifier: Apache-2.0
// The weight blob loader (emha/io/weight_blob.hpp) against blobs built byte by byte
// from the format's table (tests/support/blob_bytes.hpp): a valid blob loads in place and runs
// forward() bit for bit like the same floats given directly; each defect returns its own status
// with MhaWeights and the reference untouched. The exporter's blobs: tests/export.

#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "emha/emha.hpp"
#include "support/blob_bytes.hpp"
#include "support/numeric.hpp"

namespace {

using emha::Status;
using emha::test::BlobBytes;
using emha::test::BlobHeader;

// nn.MultiheadAttention(32, 4): in_proj [96, 32] + bias, out_proj [32, 32] + bias.
struct Plain : emha::MhaConfig<32, 4, 8> {};
const BlobHeader plain_header{32, 4, 4, 32, 32, 0xF};
const std::vector<emha::test::BlobTensorSpec> plain_tensors{{1, 96, 32}, {5, 96, 1}, {6, 32, 32}, {7, 32, 1}};

// GQA 4 on 2 with kdim 24, vdim 40, RoPE (interleaved, 6 of 8 dims, base 500000), pre-LN
// RMSNorm, no projection bias: q/k/v_proj [32,32] [16,24] [16,40], out_proj, norm weight.
struct Gqa : emha::MhaConfig<32, 4, 8> {
  static constexpr std::size_t kv_heads = 2, kdim = 24, vdim = 40;
  static constexpr bool bias = false;
  static constexpr emha::Position position = emha::Position::rope;
  static constexpr emha::RopePairing rope_pairing = emha::RopePairing::interleaved;
  static constexpr std::size_t rope_dims = 6;
  static constexpr float rope_base = 500000.0f;
  static constexpr emha::NormPlacement norm = emha::NormPlacement::pre;
  static constexpr emha::NormKind norm_kind = emha::NormKind::rms_norm;
  static constexpr float norm_eps = 1e-6f;
};
BlobHeader gqa_header() {
  BlobHeader h{32, 4, 2, 24, 40, 0, 1, 1, 6};
  h.rope_base = 500000.0f;
  h.norm = 2;
  h.norm_kind = 1;
  h.norm_eps = 1e-6f;
  h.norm_affine = 1;
  return h;
}
const std::vector<emha::test::BlobTensorSpec> gqa_tensors{{2, 32, 32}, {3, 16, 24}, {4, 16, 40}, {6, 32, 32},
                                                          {8, 32, 1}};

// Plain with one thing changed: the wrong head count (the blob says 4), no bias, a post-LN.
struct Heads8 : Plain {
  static constexpr std::size_t heads = 8, kv_heads = 8;
};
struct NoBias : Plain {
  static constexpr bool bias = false;
};
struct PostLn : Plain {
  static constexpr emha::NormPlacement norm = emha::NormPlacement::post;
};

BlobBytes plain_blob() { return emha::test::make_blob(plain_header, plain_tensors); }

emha::Span<const unsigned char> span_of(const BlobBytes& b) { return {b.bytes.data(), b.bytes.size()}; }

// The status of loading `b` as Config C; checks that `out` is untouched unless ok.
template <class C>
Status load(const BlobBytes& b) {
  static const float sentinel[1] = {0.0f};
  emha::MhaWeights w;
  w.out_proj_weight = {sentinel, 1};
  emha::BlobReference r;
  r.rows = 12345;
  const Status s = emha::load_weights<C>(span_of(b), w, &r);
  if (s != Status::ok) {
    CHECK(w.out_proj_weight.data == sentinel);
    CHECK(w.in_proj_weight.data == nullptr);
    CHECK(r.rows == 12345);
  }
  return s;
}

}  // namespace

TEST_CASE("crc32 is zlib's: the check value of \"123456789\" and the bitwise form") {
  const unsigned char digits[] = {'1', '2', '3', '4', '5', '6', '7', '8', '9'};
  CHECK(emha::detail::crc32(digits, 9) == 0xCBF43926u);
  CHECK(emha::detail::crc32(digits, 0) == 0u);
  const BlobBytes b = plain_blob();
  CHECK(emha::detail::crc32(b.bytes.data(), b.bytes.size()) ==
        emha::test::crc32_bitwise(b.bytes.data(), b.bytes.size()));
}

TEST_CASE("a valid blob loads in place: spans into the buffer, forward() as with the floats given directly") {
  const BlobBytes b = plain_blob();
  emha::MhaWeights w;
  emha::BlobReference r;
  REQUIRE(emha::load_weights<Plain>(span_of(b), w, &r) == Status::ok);
  CHECK(r.rows == 0);
  CHECK(r.input.data == nullptr);
  CHECK(w.in_proj_weight.data == b.tensor(0));
  CHECK(w.in_proj_weight.size == 96 * 32);
  CHECK(w.in_proj_bias.data == b.tensor(1));
  CHECK(w.out_proj_weight.data == b.tensor(2));
  CHECK(w.out_proj_bias.size == 32);
  CHECK(w.q_proj_weight.data == nullptr);
  CHECK(w.norm_weight.data == nullptr);

  // The same floats, copied out of the blob, given to a second layer: identical outputs.
  std::vector<std::vector<float>> copies;
  for (std::size_t i = 0; i < 4; ++i)
    copies.emplace_back(b.tensor(i), b.tensor(i) + std::size_t(b.get(b.entry(i, 1))) * b.get(b.entry(i, 2)));
  emha::MhaWeights direct;
  direct.in_proj_weight = {copies[0].data(), copies[0].size()};
  direct.in_proj_bias = {copies[1].data(), copies[1].size()};
  direct.out_proj_weight = {copies[2].data(), copies[2].size()};
  direct.out_proj_bias = {copies[3].data(), copies[3].size()};
  auto from_blob = std::make_unique<emha::MultiHeadAttention<Plain>>();
  auto given = std::make_unique<emha::MultiHeadAttention<Plain>>();
  REQUIRE(from_blob->set_weights(w) == Status::ok);
  REQUIRE(given->set_weights(direct) == Status::ok);
  const auto x = emha::test::uniform(8 * 32, 7);
  std::vector<float> y1(8 * 32), y2(8 * 32);
  REQUIRE(from_blob->forward({8, 8, 1}, {x.data(), x.size()}, {x.data(), x.size()}, {x.data(), x.size()},
                             {y1.data(), y1.size()}) == Status::ok);
  REQUIRE(given->forward({8, 8, 1}, {x.data(), x.size()}, {x.data(), x.size()}, {x.data(), x.size()},
                         {y2.data(), y2.size()}) == Status::ok);
  CHECK(std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)) == 0);
}

TEST_CASE("GQA, kdim/vdim, RoPE and an RMSNorm: every field compared, separate projections") {
  const BlobBytes b = emha::test::make_blob(gqa_header(), gqa_tensors);
  emha::MhaWeights w;
  REQUIRE(emha::load_weights<Gqa>(span_of(b), w) == Status::ok);
  CHECK(w.k_proj_weight.size == 16 * 24);
  CHECK(w.v_proj_weight.data == b.tensor(2));
  CHECK(w.norm_weight.size == 32);
  auto mha = std::make_unique<emha::MultiHeadAttention<Gqa>>();
  CHECK(mha->set_weights(w) == Status::ok);

  // Each option changed in the blob alone (resealed): config_mismatch.
  const std::size_t fields[] = {20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 72, 76, 80, 84, 88};
  for (std::size_t f : fields) {
    CAPTURE(f);
    BlobBytes c = b;
    c.put(f, c.get(f) ^ 1u);
    c.reseal();
    CHECK(load<Gqa>(c) == Status::config_mismatch);
  }
  // Fields that do not apply to this Config (xPos's scale base) are not compared.
  BlobBytes c = b;
  c.put_f(68, 512.0f);
  c.reseal();
  CHECK(load<Gqa>(c) == Status::ok);
}

TEST_CASE("the blob's frame: each defect its own status, nothing read past the buffer") {
  const BlobBytes b = plain_blob();
  emha::MhaWeights none;
  CHECK(emha::load_weights<Plain>({nullptr, 0}, none) == Status::null_pointer);
  SUBCASE("truncated: shorter than the header, or than total_bytes") {
    for (std::size_t n : {std::size_t(0), std::size_t(4), std::size_t(127), b.bytes.size() - 1}) {
      BlobBytes c = b;
      c.bytes.resize(n);
      emha::MhaWeights w;
      CHECK(emha::load_weights<Plain>({c.bytes.data(), n}, w) == Status::truncated);
    }
  }
  SUBCASE("bad magic, bad version") {
    BlobBytes c = b;
    c.bytes[3] = 'B';
    CHECK(load<Plain>(c) == Status::bad_magic);
    c = b;
    for (std::uint32_t v : {0u, emha::blob_version + 1, 0x100u}) {
      c.put(4, v);
      CHECK(load<Plain>(c) == Status::bad_version);
    }
  }
  SUBCASE("bad checksum: one bit of a weight, of a table entry, of the header") {
    for (std::size_t at : {std::size_t(b.get(b.entry(2, 3))) + 17, b.entry(1, 1), std::size_t(40)}) {
      BlobBytes c = b;
      c.bytes[at] ^= 0x10;
      CHECK(load<Plain>(c) == Status::bad_checksum);
    }
  }
  SUBCASE("misaligned: the buffer, or a tensor offset") {
    std::vector<unsigned char> shifted(b.bytes.size() + 1);
    std::memcpy(shifted.data() + 1, b.bytes.data(), b.bytes.size());
    emha::MhaWeights w;
    CHECK(emha::load_weights<Plain>({shifted.data() + 1, b.bytes.size()}, w) == Status::misaligned);
    BlobBytes c = b;
    c.put(c.entry(3, 3), c.get(c.entry(3, 3)) + 4);
    c.reseal();
    CHECK(load<Plain>(c) == Status::misaligned);
  }
  SUBCASE("bad format: the table and its tensors") {
    const auto edit = [&b](std::size_t at, std::uint32_t v) {
      BlobBytes c = b;
      c.put(at, v);
      c.reseal();
      return c;
    };
    CHECK(load<Plain>(edit(16, 64)) == Status::bad_format);                      // header_bytes
    CHECK(load<Plain>(edit(92, 17)) == Status::bad_format);                      // count > 16
    CHECK(load<Plain>(edit(b.entry(0, 0), 13)) == Status::bad_format);           // unknown id
    CHECK(load<Plain>(edit(16, 128)) == Status::bad_format);                     // version 1's header
    CHECK(load<Plain>(edit(b.entry(1, 0), 1)) == Status::bad_format);            // id twice
    CHECK(load<Plain>(edit(b.entry(3, 3), 128)) == Status::bad_format);          // over the table
    CHECK(load<Plain>(edit(b.entry(3, 3), b.get(8))) == Status::bad_format);     // past the end
    CHECK(load<Plain>(edit(b.entry(2, 1), 0xFFFFFFFFu)) == Status::bad_format);  // rows * cols overflows
    CHECK(load<Plain>(edit(8, 100)) == Status::bad_format);                      // total < header
    // The table itself past total_bytes: 5 entries claimed in a blob cut to the header and 1 entry.
    BlobBytes c = b;
    c.bytes.resize(176);
    c.put(8, 176);
    c.put(92, 5);
    c.reseal();
    CHECK(load<Plain>(c) == Status::bad_format);
  }
}

TEST_CASE("config mismatch: the Config's dims, a missing, an extra or a transposed tensor") {
  const BlobBytes b = plain_blob();
  CHECK(load<Heads8>(b) == Status::config_mismatch);
  CHECK(load<NoBias>(b) == Status::config_mismatch);
  CHECK(load<PostLn>(b) == Status::config_mismatch);
  using emha::test::make_blob;
  CHECK(load<Plain>(make_blob(plain_header, {{1, 96, 32}, {5, 96, 1}, {6, 32, 32}})) ==
        Status::config_mismatch);  // out_proj.bias missing
  CHECK(load<Plain>(make_blob(plain_header, {{1, 96, 32}, {5, 96, 1}, {6, 32, 32}, {7, 32, 1}, {8, 32, 1}})) ==
        Status::config_mismatch);  // a norm weight the Config has no use for
  CHECK(load<Plain>(make_blob(plain_header, {{1, 32, 96}, {5, 96, 1}, {6, 32, 32}, {7, 32, 1}})) ==
        Status::config_mismatch);  // in_proj_weight transposed
  auto gqa = gqa_tensors;
  gqa[1] = {3, 24, 16};  // k_proj transposed
  CHECK(load<Gqa>(make_blob(gqa_header(), gqa)) == Status::config_mismatch);
  gqa = gqa_tensors;
  gqa[1] = {1, 64, 32};  // in_proj_weight where kdim != d_model needs q/k/v_proj
  CHECK(load<Gqa>(make_blob(gqa_header(), gqa)) == Status::config_mismatch);
}

TEST_CASE("the reference tensors: [ref_rows, d_model] each, both or none") {
  BlobHeader h = plain_header;
  h.ref_rows = 5;
  h.ref_causal = 1;
  auto tensors = plain_tensors;
  tensors.push_back({16, 5, 32});
  tensors.push_back({17, 5, 32});
  const BlobBytes b = emha::test::make_blob(h, tensors);
  emha::MhaWeights w;
  emha::BlobReference r;
  REQUIRE(emha::load_weights<Plain>(span_of(b), w, &r) == Status::ok);
  CHECK(r.rows == 5);
  CHECK(r.causal);
  CHECK(r.input.data == b.tensor(4));
  CHECK(r.output.size == 5 * 32);
  tensors.pop_back();
  CHECK(load<Plain>(emha::test::make_blob(h, tensors)) == Status::config_mismatch);  // no output
  tensors.push_back({17, 4, 32});
  CHECK(load<Plain>(emha::test::make_blob(h, tensors)) == Status::config_mismatch);  // 4 rows of 5
}

// Plain's head width, scale and QK-norm said otherwise, and the layers that need version 2.
struct Head16 : Plain {
  static constexpr std::size_t head_dim = 16;  // in_proj [3 * 64, 32], out_proj [32, 64]
};
struct UnitScale : Plain {
  static constexpr float scale = 1.0f;
};
struct ExplicitScale : Plain {  // 1/sqrt(8) written out: the same scale as the default
  static constexpr float scale = 0.35355339f;
};
struct QkPerHead : Plain {
  static constexpr emha::QkNorm qk_norm = emha::QkNorm::per_head;
  static constexpr bool qk_norm_unit_offset = true;
};
struct T5Like : Plain {
  static constexpr bool bias = false;
  static constexpr float scale = 1.0f;
  static constexpr emha::Position position = emha::Position::relative_bias;
  static constexpr std::size_t relative_buckets = 8, relative_max_distance = 20;
  static constexpr bool relative_bidirectional = false;
};
struct Flat : Plain {
  static constexpr emha::HeadSplit head_split = emha::HeadSplit::flat_view;
};

TEST_CASE("version 2 fields: head_dim, scale, QK-norm, T5's bias, the head split; version 1 still loads") {
  using emha::test::make_blob;
  BlobHeader v1 = plain_header;
  v1.version = 1;
  CHECK(load<Plain>(make_blob(v1, plain_tensors)) == Status::ok);
  CHECK(load<ExplicitScale>(make_blob(v1, plain_tensors)) == Status::ok);  // the same scale resolved
  CHECK(load<UnitScale>(make_blob(v1, plain_tensors)) == Status::config_mismatch);
  CHECK(load<Flat>(make_blob(v1, plain_tensors)) == Status::config_mismatch);
  CHECK(load<Head16>(make_blob(v1, {{1, 192, 32}, {5, 192, 1}, {6, 32, 64}, {7, 32, 1}})) ==
        Status::config_mismatch);

  BlobHeader h16 = plain_header;
  h16.head_dim = 16;
  const std::vector<emha::test::BlobTensorSpec> t16{{1, 192, 32}, {5, 192, 1}, {6, 32, 64}, {7, 32, 1}};
  CHECK(load<Head16>(make_blob(h16, t16)) == Status::ok);
  CHECK(load<Plain>(make_blob(h16, t16)) == Status::config_mismatch);
  CHECK(load<Head16>(make_blob(h16, {{1, 192, 32}, {5, 192, 1}, {6, 32, 32}, {7, 32, 1}})) ==
        Status::config_mismatch);  // out_proj [d_model, d_model] where head_dim makes it [32, 64]

  BlobHeader unit = plain_header;
  unit.scale = 1.0f;
  CHECK(load<UnitScale>(make_blob(unit, plain_tensors)) == Status::ok);
  CHECK(load<Plain>(make_blob(unit, plain_tensors)) == Status::config_mismatch);
  CHECK(load<ExplicitScale>(make_blob(plain_header, plain_tensors)) == Status::ok);

  BlobHeader qk = plain_header;
  qk.qk_norm = 1;
  qk.qk_norm_unit_offset = 1;
  qk.qk_norm_eps = 1e-6f;
  auto tqk = plain_tensors;
  tqk.push_back({10, 8, 1});
  tqk.push_back({11, 8, 1});
  CHECK(load<QkPerHead>(make_blob(qk, tqk)) == Status::ok);
  CHECK(load<Plain>(make_blob(qk, tqk)) == Status::config_mismatch);
  qk.qk_norm_unit_offset = 0;
  CHECK(load<QkPerHead>(make_blob(qk, tqk)) == Status::config_mismatch);
  qk.qk_norm_unit_offset = 1;
  qk.qk_norm_eps = 1e-5f;
  CHECK(load<QkPerHead>(make_blob(qk, tqk)) == Status::config_mismatch);
  qk.qk_norm_eps = 1e-6f;
  tqk.back() = {11, 32, 1};  // a whole-projection k_norm for a per-head Config
  CHECK(load<QkPerHead>(make_blob(qk, tqk)) == Status::config_mismatch);

  BlobHeader t5 = plain_header;
  t5.bias = 0;
  t5.scale = 1.0f;
  t5.position = 4;
  t5.relative_buckets = 8;
  t5.relative_max_distance = 20;
  const std::vector<emha::test::BlobTensorSpec> tt5{{1, 96, 32}, {6, 32, 32}, {12, 8, 4}};
  CHECK(load<T5Like>(make_blob(t5, tt5)) == Status::ok);
  CHECK(load<T5Like>(make_blob(t5, {{1, 96, 32}, {6, 32, 32}})) == Status::config_mismatch);
  CHECK(load<T5Like>(make_blob(t5, {{1, 96, 32}, {6, 32, 32}, {12, 4, 8}})) == Status::config_mismatch);
  t5.relative_bidirectional = 1;
  CHECK(load<T5Like>(make_blob(t5, tt5)) == Status::config_mismatch);
  t5.relative_bidirectional = 0;
  t5.relative_max_distance = 21;
  CHECK(load<T5Like>(make_blob(t5, tt5)) == Status::config_mismatch);

  BlobHeader flat = plain_header;
  flat.head_split = 1;
  CHECK(load<Flat>(make_blob(flat, plain_tensors)) == Status::ok);
  CHECK(load<Plain>(make_blob(flat, plain_tensors)) == Status::config_mismatch);
}

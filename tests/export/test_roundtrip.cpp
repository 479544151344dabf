// SPDX-License-Identifier: Apache-2.0
// Round trip of every exported fixture: a randomly initialized PyTorch module of each
// naming family, exported by lib/export/emha_export.py (tests/export/gen_roundtrip.py). Its header
// compiled into this suite and its blob read from disk (as emha-run does) give the same weights
// bit for bit and the same outputs, within the suite's float32 budget of the real module's;
// the blob's embedded reference is met; a Config with the wrong head count is refused. T5's
// bucket of every relative position the fixtures use is HF's _relative_position_bucket's.

#include <doctest/doctest.h>

#include <cstddef>
#include <fstream>
#include <iterator>
#include <string>
#include <tuple>
#include <vector>

#include "emha/kernels/relative_bias.hpp"
#include "export/fixture_bytes.hpp"
#include "export/fixtures/all.hpp"
#include "export/roundtrip.hpp"

namespace {

using emha::test::FileBytes;
using emha::test::read_fixture;

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("an exported PyTorch module round-trips: header, blob, outputs", E, roundtrip) {
  const FileBytes blob = read_fixture(E::blob);
  REQUIRE(blob.span.size > 0);
  const emha::test::RoundTrip r = emha::test::round_trip<E>(blob.span);
  INFO(std::string(E::name) << ": max |emha - f64| " << r.mine << ", max |torch f32 - f64| " << r.theirs
               << ", max |emha - torch| / (1 + |torch|) " << r.vs_torch << " (tolerance " << r.tolerance << ")");
  REQUIRE(r.loaded == emha::Status::ok);
  CHECK(r.same_weights);
  CHECK(r.from_blob == emha::Status::ok);
  CHECK(r.from_header == emha::Status::ok);
  CHECK(r.same_outputs);
  CHECK(r.vs_torch <= r.tolerance);
  CHECK(r.reference <= 1.0);
  CHECK(r.wrong_heads == emha::Status::config_mismatch);
  CHECK(r.mine <= 2.0 * r.theirs);  // parity: within 2x of PyTorch float32's own error vs float64
  MESSAGE("round trip " << std::string(E::name) << ": emha max error vs float64 " << r.mine << ", torch float32 " << r.theirs
                        << ", ratio " << r.mine / r.theirs);
}
TEST_CASE_TEMPLATE_APPLY(roundtrip, export_fixtures::all);

TEST_CASE_TEMPLATE("T5's relative position buckets are HF's, position by position", E,
                   export_fixtures::hf_t5_encoder::expected, export_fixtures::hf_t5_decoder::expected) {
  using C = typename E::config;
  static_assert(C::relative_buckets == E::relative_buckets && C::relative_max_distance == E::relative_max_distance &&
                C::relative_bidirectional == E::relative_bidirectional);
  for (std::size_t i = 0; i < std::size(E::bucket_table); ++i) {
    const std::ptrdiff_t rel = E::bucket_table_first + std::ptrdiff_t(i);
    INFO(E::name << ": relative position (key - query) " << rel);
    CHECK(emha::relative_bucket(rel, C::relative_buckets, C::relative_max_distance, C::relative_bidirectional) ==
          std::size_t(E::bucket_table[i]));
  }
}

TEST_CASE("a blob is refused by a Config it was not exported for, and when damaged") {
  using E = export_fixtures::hf_gqa::expected;
  FileBytes blob = read_fixture(E::blob);
  emha::MhaWeights w;
  CHECK(emha::load_weights<export_fixtures::nn_mha::Config>(blob.span, w) == emha::Status::config_mismatch);
  blob.storage[std::size_t(blob.span.data - blob.storage.data()) + blob.span.size - 70] ^= 1;
  CHECK(emha::load_weights<E::config>(blob.span, w) == emha::Status::bad_checksum);
  CHECK(emha::load_weights<E::config>({blob.span.data, 100}, w) == emha::Status::truncated);
}

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

namespace {

// A fixture's Config with another RoPE scaling.
template <class C, const emha::RopeScalingParams& S>
struct OtherScaling : C {
  static constexpr emha::RopeScalingParams rope_scaling = S;
};
constexpr emha::RopeScalingParams no_scaling{};
constexpr emha::RopeScalingParams llama3_other_factor = emha::rope_llama3(4.0f, 1.0f, 4.0f, 64);
constexpr emha::RopeScalingParams llama3_other_band = emha::rope_llama3(8.0f, 1.0f, 2.0f, 64);
constexpr float other_short[4] = {1.0f, 1.05f, 1.3f, 1.8f};
constexpr emha::RopeScalingParams longrope_other_factors = emha::rope_longrope(other_short, 16.0f, 64, 0x1.4a7e9cp+0f);

template <class C>
emha::Status load_as(const emha::test::FileBytes& blob) {
  emha::MhaWeights w;
  return emha::load_weights<C>(blob.span, w);
}

}  // namespace

TEST_CASE("a blob's RoPE scaling must be its Config's: a scaled blob is refused by another scaling or none") {
  const FileBytes llama = read_fixture(export_fixtures::hf_llama31::expected::blob);
  const FileBytes longrope = read_fixture(export_fixtures::hf_longrope::expected::blob);
  const FileBytes mistral = read_fixture(export_fixtures::hf_mistral::expected::blob);
  using L = export_fixtures::hf_llama31::Config;
  using R = export_fixtures::hf_longrope::Config;
  using M = export_fixtures::hf_mistral::Config;
  REQUIRE(llama.span.size > 0);
  REQUIRE(longrope.span.size > 0);
  REQUIRE(mistral.span.size > 0);
  CHECK(load_as<L>(llama) == emha::Status::ok);
  CHECK(load_as<OtherScaling<L, no_scaling>>(llama) == emha::Status::config_mismatch);
  CHECK(load_as<OtherScaling<L, llama3_other_factor>>(llama) == emha::Status::config_mismatch);
  CHECK(load_as<OtherScaling<L, llama3_other_band>>(llama) == emha::Status::config_mismatch);
  CHECK(load_as<R>(longrope) == emha::Status::ok);  // the factors' CRC covers the array
  CHECK(load_as<OtherScaling<R, longrope_other_factors>>(longrope) == emha::Status::config_mismatch);
  CHECK(load_as<OtherScaling<M, llama3_other_factor>>(mistral) == emha::Status::config_mismatch);  // version 2
}

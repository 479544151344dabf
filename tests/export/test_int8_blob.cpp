// SPDX-License-Identifier: Apache-2.0
// The exporter's int8 weights (emha_export.py --weights int8, tests/export/gen_roundtrip.py's
// nn_mha_int8): the blob read from disk (version 3) fills MhaWeights' *_int8 and *_scale spans with
// the bytes of the header's arrays, bit for bit, the float weight spans stay empty, the biases and
// the reference are the header's; a float Config refuses it and an int8 Config refuses a float
// blob. forward() on int8 weights is the layer's test, not this one.

#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "export/fixture_bytes.hpp"
#include "export/fixtures/all_int8.hpp"
#include "export/fixtures/nn_mha_expected.hpp"

namespace {

using emha::test::FileBytes;
using emha::test::read_fixture;

template <class T>
bool same_bytes(emha::Span<const T> loaded, emha::Span<const T> header, const FileBytes& blob) {
  const auto* at = reinterpret_cast<const unsigned char*>(loaded.data);
  return loaded.size == header.size && loaded.size != 0 && at >= blob.span.data &&
         at + loaded.size * sizeof(T) <= blob.span.data + blob.span.size &&
         std::memcmp(loaded.data, header.data, loaded.size * sizeof(T)) == 0;
}

}  // namespace

TEST_CASE("an exported int8 blob loads the header's int8 weights and scales, bit for bit") {
  using E = export_fixtures::nn_mha_int8::expected;
  namespace fx = export_fixtures::nn_mha_int8;
  static_assert(E::config::weight_type == emha::WeightType::int8);
  const FileBytes blob = read_fixture(E::blob);
  REQUIRE(blob.span.size > 0);
  CHECK(blob.span.data[4] == 3);  // version 3
  emha::MhaWeights w;
  emha::BlobReference ref;
  REQUIRE(emha::load_weights<E::config>(blob.span, w, &ref) == emha::Status::ok);
  const emha::MhaWeights h = E::header_weights();
  CHECK(same_bytes(w.in_proj_weight_int8, h.in_proj_weight_int8, blob));
  CHECK(same_bytes(w.in_proj_weight_scale, h.in_proj_weight_scale, blob));
  CHECK(same_bytes(w.out_proj_weight_int8, h.out_proj_weight_int8, blob));
  CHECK(same_bytes(w.out_proj_weight_scale, h.out_proj_weight_scale, blob));
  CHECK(same_bytes(w.in_proj_bias, h.in_proj_bias, blob));
  CHECK(same_bytes(w.out_proj_bias, h.out_proj_bias, blob));
  CHECK(h.in_proj_weight_int8.data == fx::in_proj_weight_int8);
  CHECK(h.out_proj_weight_scale.data == fx::out_proj_weight_scale);
  // [q_dim + 2 kv_dim, d_model] int8 and one scale per row; no float weights on either side.
  CHECK(w.in_proj_weight_int8.size == 3 * E::config::d_model * E::config::d_model);
  CHECK(w.in_proj_weight_scale.size == 3 * E::config::d_model);
  CHECK(w.in_proj_weight.size == 0);
  CHECK(w.out_proj_weight.size == 0);
  CHECK(h.in_proj_weight.size == 0);
  CHECK(h.out_proj_weight.size == 0);
  // Symmetric: no -128; every scale finite and positive.
  for (std::size_t i = 0; i < w.in_proj_weight_int8.size; ++i) REQUIRE(w.in_proj_weight_int8.data[i] != -128);
  for (std::size_t i = 0; i < w.in_proj_weight_scale.size; ++i) REQUIRE(w.in_proj_weight_scale.data[i] > 0.0f);
  REQUIRE(ref.rows == E::reference_rows);
  CHECK(std::memcmp(ref.input.data, E::reference_input, ref.input.size * sizeof(float)) == 0);
  CHECK(std::memcmp(ref.output.data, E::reference_output, ref.output.size * sizeof(float)) == 0);
}

TEST_CASE("an int8 blob for a float Config, and a float blob for an int8 Config: weight_type_mismatch") {
  const FileBytes int8_blob = read_fixture(export_fixtures::nn_mha_int8::expected::blob);
  const FileBytes float_blob = read_fixture(export_fixtures::nn_mha::expected::blob);
  emha::MhaWeights w;
  CHECK(emha::load_weights<export_fixtures::nn_mha::Config>(int8_blob.span, w) ==
        emha::Status::weight_type_mismatch);
  CHECK(emha::load_weights<export_fixtures::nn_mha_int8::Config>(float_blob.span, w) ==
        emha::Status::weight_type_mismatch);
  CHECK(emha::load_weights<export_fixtures::nn_mha::Config>(float_blob.span, w) == emha::Status::ok);
}

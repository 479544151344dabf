// SPDX-License-Identifier: Apache-2.0
// fully_connected_s8_ref and batch_matmul_s8_ref against TFLite's reference int8 FULLY_CONNECTED
// (per channel) and BATCH_MATMUL re-implemented in Python (gen_matmul_s8_fixtures.py ->
// fixtures/matmul_s8.hpp): every output byte, both roundings, zero points at both int8 ends,
// with row strides, on the host and the firmware.

#include <cstddef>
#include <cstdint>

#include "emha/kernels/matmul_s8_ref.hpp"
#include "kernels/fixtures/matmul_s8.hpp"
#include "support/unit.hpp"

namespace {

namespace fx = emha::matmul_s8_fixtures;
using emha::Rounding;

constexpr std::size_t pad = 2, max_out = 7 * 300 + 64;  // outputs of the largest case, with strides
std::int8_t g_y[max_out];

// Every output of c [m x n] (row stride n + pad) against the fixture's; the gaps stay untouched.
std::size_t differing(std::size_t m, std::size_t n, const std::int8_t* expected) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n + pad; ++j)
      bad += j < n ? g_y[i * (n + pad) + j] != expected[i * n + j] : g_y[i * (n + pad) + j] != 42;
  return bad;
}

template <Rounding R>
void check_all(const std::int8_t* expected) {
  for (const fx::FullyConnected& c : fx::fully_connected) {
    EMHA_INFO("fully connected " << c.m << " x " << c.n << " x " << c.k);
    EMHA_CHECK(c.m * (c.n + pad) <= max_out);
    for (std::int8_t& v : g_y) v = 42;
    emha::fully_connected_s8_ref<R>(c.m, c.n, c.k, fx::int8s + c.x, c.k, c.zero_point_x, fx::int8s + c.w, c.k,
                                    fx::biases + c.bias, fx::multipliers + c.multipliers, c.zero_point_y, g_y, c.n + pad);
    EMHA_CHECK(differing(c.m, c.n, expected + c.out) == 0);
  }
  for (const fx::BatchMatmul& c : fx::batch_matmul) {
    EMHA_INFO("batch matmul " << c.m << " x " << c.n << " x " << c.k);
    EMHA_CHECK(c.m * (c.n + pad) <= max_out);
    for (std::int8_t& v : g_y) v = 42;
    emha::batch_matmul_s8_ref<R>(c.m, c.n, c.k, fx::int8s + c.a, c.k, c.zero_point_a, fx::int8s + c.b, c.k,
                                 c.zero_point_b, c.multiplier, c.zero_point_c, g_y, c.n + pad);
    EMHA_CHECK(differing(c.m, c.n, expected + c.out) == 0);
  }
}

}  // namespace

EMHA_TEST_CASE("fully_connected_s8_ref and batch_matmul_s8_ref: TFLite's int8 kernels, double rounding") {
  check_all<Rounding::double_rounding>(fx::double_rounding);
}

EMHA_TEST_CASE("fully_connected_s8_ref and batch_matmul_s8_ref: TFLite's int8 kernels, single rounding") {
  check_all<Rounding::single_rounding>(fx::single_rounding);
}

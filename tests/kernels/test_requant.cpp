// SPDX-License-Identifier: Apache-2.0
// Fixed-point requantization (emha/kernels/requant.hpp) against TFLite's and CMSIS-NN's
// arithmetic re-implemented in Python (gen_requant_fixtures.py -> fixtures/requant.hpp): every
// output bit, both roundings, on the host and the firmware; and at compile time.

#include <cstddef>
#include <cstdint>

#include "emha/kernels/requant.hpp"
#include "kernels/fixtures/requant.hpp"
#include "support/unit.hpp"

namespace {

using emha::QuantizedMultiplier;
using emha::Rounding;
namespace fx = emha::requant_fixtures;

// A tie the two roundings part on: 5 * 0.25 = 1.25; double rounding takes 5 * 0.5 = 2.5 -> 3 (half
// up), then 3 / 2 = 1.5 -> 2 (half away from zero); single rounding gives 1.
static_assert(emha::requantize<Rounding::double_rounding>(5, QuantizedMultiplier{1 << 30, -1}) == 2);
static_assert(emha::requantize<Rounding::single_rounding>(5, QuantizedMultiplier{1 << 30, -1}) == 1);
static_assert(emha::saturating_rounding_doubling_high_mul(INT32_MIN, INT32_MIN) == INT32_MAX);

}  // namespace

EMHA_TEST_CASE("requantize: TFLite's double and single rounding, bit for bit") {
  std::size_t double_wrong = 0, single_wrong = 0, single_checked = 0, parted = 0;
  for (const fx::Case& c : fx::cases) {
    const QuantizedMultiplier q{c.multiplier, c.shift};
    const std::int32_t d = emha::requantize<Rounding::double_rounding>(c.x, q);
    double_wrong += d != c.double_rounding;
    if (d != c.double_rounding)
      EMHA_MESSAGE("double rounding: x " << c.x << " multiplier " << c.multiplier << " shift " << c.shift << ": "
                                         << d << ", TFLite " << c.double_rounding);
    if (!c.single_valid) continue;
    ++single_checked;
    const std::int32_t s = emha::requantize<Rounding::single_rounding>(c.x, q);
    single_wrong += s != c.single_rounding;
    parted += s != d;
  }
  EMHA_CHECK(double_wrong == 0);
  EMHA_CHECK(single_wrong == 0);
  EMHA_CHECK(single_checked > 0);
  EMHA_CHECK(parted == fx::parted);  // the ties that part the roundings are there
}

EMHA_TEST_CASE("saturating_rounding_doubling_high_mul and rounding_divide_by_pot: gemmlowp's") {
  for (const fx::Srdhm& c : fx::srdhm) {
    EMHA_INFO("a " << c.a << " b " << c.b);
    EMHA_CHECK(emha::saturating_rounding_doubling_high_mul(c.a, c.b) == c.out);
  }
  // Half away from zero at every exponent: +-(2^e + 2^(e-1)) / 2^e = +-1.5 -> +-2, and one less: 1.
  for (int e = 1; e < 31; ++e) {
    const std::int32_t half = std::int32_t(1) << (e - 1), one = std::int32_t(1) << e;
    EMHA_INFO("exponent " << e);
    EMHA_CHECK(emha::rounding_divide_by_pot(one + half, e) == 2);
    EMHA_CHECK(emha::rounding_divide_by_pot(-(one + half), e) == -2);
    EMHA_CHECK(emha::rounding_divide_by_pot(one + half - 1, e) == 1);
    EMHA_CHECK(emha::rounding_divide_by_pot(-(one + half - 1), e) == -1);
  }
  EMHA_CHECK(emha::rounding_divide_by_pot(INT32_MIN, 31) == -1);
  EMHA_CHECK(emha::rounding_divide_by_pot(INT32_MAX, 31) == 1);
}

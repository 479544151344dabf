// SPDX-License-Identifier: Apache-2.0
// RoPE scaling (rope_inv_freq_f32, rope_table_scaled_f32) against transformers' float32 values and
// float64 math (tests/kernels/fixtures/rope_scaling.hpp: Llama 3.1 and 3.2, yarn as Qwen2.5 and
// gpt-oss set it and with mscale, Phi-3's longrope, linear, dynamic), and every refused input.
//
// Bounds (u = 2^-24): transformers' inv_freq is a pow (torch's, which may be a vectorized one of
// a few ulp) and up to five float32 operations more (yarn's blend, llama3's smoothing), so emha's
// and its differ by at most 8 ulp of inv_freq, and each differs from float64 by at most 16u
// relative. The attention factor is a double rounded once: equal. The table's cos and sin then
// differ from transformers' by at most the angle's difference p |d inv_freq| plus 2u each.

#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "emha/kernels/rope.hpp"
#include "fixtures/rope_scaling.hpp"
#include "support/numeric.hpp"

namespace {

using emha::RopeScaling;
using emha::RopeScalingParams;
using emha::Status;
using emha::test::u32;

// ulp of a positive normal float.
double ulp(float v) { return std::ldexp(1.0, std::ilogb(v) - 23); }

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("rope scaling matches transformers' inv_freq, attention factor and table", F, scaled) {
  std::vector<float> inv(F::d_rot / 2);
  float factor = 0;
  REQUIRE(emha::rope_inv_freq_f32(F::d_rot, F::base, F::scaling, inv.data(), &factor) == Status::ok);
  CHECK(factor == F::attention_factor);
  CHECK(std::fabs(double(factor) - F::attention_factor_f64) <= F::attention_factor_f64 * u32);
  double worst_hf = 0, worst_f64 = 0;
  for (std::size_t i = 0; i < F::d_rot / 2; ++i) {
    INFO(F::name << " pair " << i << ": emha " << inv[i] << ", transformers " << F::inv_freq[i] << ", float64 "
                 << F::inv_freq_f64[i]);
    const double vs_hf = std::fabs(double(inv[i]) - F::inv_freq[i]) / ulp(F::inv_freq[i]);
    const double vs_f64 = std::fabs(inv[i] - F::inv_freq_f64[i]) / F::inv_freq_f64[i] / u32;
    CHECK(vs_hf <= 8);
    CHECK(vs_f64 <= 16);
    worst_hf = vs_hf > worst_hf ? vs_hf : worst_hf;
    worst_f64 = vs_f64 > worst_f64 ? vs_f64 : worst_f64;
  }
  MESSAGE(std::string(F::name) << ": inv_freq within " << worst_hf << " ulp of transformers', " << worst_f64
                  << " u of float64");
  constexpr std::size_t half = F::d_rot / 2, n = F::positions * half;
  std::vector<float> c(n), s(n);
  REQUIRE(emha::rope_table_scaled_f32(F::positions, F::d_rot, F::base, F::scaling, c.data(), s.data()) == Status::ok);
  for (std::size_t p = 0; p < F::positions; ++p)
    for (std::size_t i = 0; i < half; ++i) {
      const double bound = F::attention_factor * (p * 8 * ulp(F::inv_freq[i]) + 4 * u32);
      INFO(F::name << " position " << p << " pair " << i);
      CHECK(std::fabs(c[p * half + i] - F::cos[p * half + i]) <= bound);
      CHECK(std::fabs(s[p * half + i] - F::sin[p * half + i]) <= bound);
    }
}
TEST_CASE_TEMPLATE_APPLY(scaled, emha::rope_scaling_fixtures::all);

TEST_CASE("a scaling of none, and dynamic within its length, is the unscaled table") {
  constexpr std::size_t positions = 9, d_rot = 24, n = positions * d_rot / 2;
  float c0[n], s0[n], c1[n], s1[n];
  REQUIRE(emha::rope_table_f32(positions, d_rot, 500000.0f, c0, s0) == Status::ok);
  for (const RopeScalingParams& sc : {RopeScalingParams{}, emha::rope_dynamic(3.0f, 4096)}) {
    REQUIRE(emha::rope_table_scaled_f32(positions, d_rot, 500000.0f, sc, c1, s1) == Status::ok);
    for (std::size_t i = 0; i < n; ++i) {
      CHECK(c1[i] == c0[i]);
      CHECK(s1[i] == s0[i]);
    }
  }
}

TEST_CASE("rope scaling refuses bad parameters and leaves its outputs untouched") {
  constexpr float shorts[4] = {1, 1, 1, 1};
  const struct {
    std::size_t d_rot;
    float base;
    RopeScalingParams s;
    Status want;
  } bad[] = {
      {8, 10000.0f, emha::rope_linear(0.0f), Status::invalid_argument},
      {8, 10000.0f, emha::rope_linear(-2.0f), Status::invalid_argument},
      {7, 10000.0f, emha::rope_linear(2.0f), Status::invalid_argument},
      {0, 10000.0f, emha::rope_linear(2.0f), Status::invalid_argument},
      {8, 0.0f, emha::rope_linear(2.0f), Status::invalid_argument},
      {8, 10000.0f, emha::rope_llama3(8.0f, 4.0f, 1.0f, 8192), Status::invalid_argument},
      {8, 10000.0f, emha::rope_llama3(8.0f, 0.0f, 4.0f, 8192), Status::invalid_argument},
      {8, 10000.0f, emha::rope_llama3(8.0f, 1.0f, 4.0f, 0), Status::invalid_argument},
      {8, 10000.0f, emha::rope_yarn(4.0f, 0), Status::invalid_argument},
      {8, 10000.0f, emha::rope_yarn(4.0f, 4096, 32.0f, 1.0f, -1.0f), Status::invalid_argument},
      {2, 10000.0f, emha::rope_dynamic(2.0f, 2048), Status::invalid_argument},
      {8, 10000.0f, emha::rope_longrope(nullptr, 32.0f, 4096), Status::null_pointer},
      {8, 10000.0f, emha::rope_longrope(shorts, 32.0f, 0), Status::invalid_argument},
  };
  for (const auto& b : bad) {
    float inv[4] = {7, 7, 7, 7}, factor = 7, c[8] = {7, 7, 7, 7, 7, 7, 7, 7}, s[8] = {7, 7, 7, 7, 7, 7, 7, 7};
    INFO("type " << int(b.s.type) << " d_rot " << b.d_rot << " base " << b.base << " factor " << b.s.factor);
    CHECK(emha::rope_inv_freq_f32(b.d_rot, b.base, b.s, inv, &factor) == b.want);
    CHECK(emha::rope_table_scaled_f32(2, b.d_rot, b.base, b.s, c, s) == b.want);
    CHECK((inv[0] == 7 && inv[3] == 7 && factor == 7 && c[0] == 7 && c[7] == 7 && s[0] == 7 && s[7] == 7));
  }
  float inv[4], c[8];
  CHECK(emha::rope_inv_freq_f32(8, 10000.0f, emha::rope_linear(2.0f), nullptr, c) == Status::null_pointer);
  CHECK(emha::rope_inv_freq_f32(8, 10000.0f, emha::rope_linear(2.0f), inv, nullptr) == Status::null_pointer);
  CHECK(emha::rope_table_scaled_f32(1, 8, 10000.0f, emha::rope_linear(2.0f), c, nullptr) == Status::null_pointer);
}

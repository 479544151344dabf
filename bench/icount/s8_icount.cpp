// SPDX-License-Identifier: Apache-2.0
// One forward of the integer layers (full-integer int8, 16x8) against the float layer of the same
// shape, for instruction counts under qemu (bench/icount/s8_icount.sh): MhaConfig<D, 4, D / 2>,
// causal self-attention over D / 2 tokens, weights read in place (float: prepack_weights off, as
// on a microcontroller). Compile-time choices, so the firmware needs no arguments:
//   EMHA_ICOUNT_D      64 or 128 (d_model; the sequence is half of it)
//   EMHA_ICOUNT_KIND   0: float, 1: Arithmetic::s8, 2: Arithmetic::s16x8
//   EMHA_ICOUNT_REPS   forwards run; the script halves the difference of 3 and 1
// Weights and inputs are seeded values; the multipliers are plausible ones (2^-7 to 2^-9), which
// set the instruction count no more than any others would.

#include <cstddef>
#include <cstdint>

#include "emha/emha.hpp"

#ifndef EMHA_ICOUNT_REPS
#define EMHA_ICOUNT_REPS 1
#endif
#ifndef EMHA_ICOUNT_D
#define EMHA_ICOUNT_D 64
#endif
#ifndef EMHA_ICOUNT_KIND
#define EMHA_ICOUNT_KIND 1
#endif

namespace {
constexpr std::size_t d = EMHA_ICOUNT_D, seq = d / 2;

std::uint32_t next(std::uint32_t& seed) {
  seed = seed * 1664525u + 1013904223u;
  return seed >> 8;
}

#if EMHA_ICOUNT_KIND == 1
struct Layer : emha::MhaConfig<d, 4, seq> {
  static constexpr emha::Arithmetic arithmetic = emha::Arithmetic::s8;
};
std::int8_t weight[4][d * d], x[seq * d], y[seq * d];
std::int32_t bias[4][d];
emha::QuantizedMultiplier multiplier[4][d];

int run() {
  static emha::MultiHeadAttention<Layer> attention;
  std::uint32_t seed = 1;
  for (auto& w : weight)
    for (auto& v : w) v = std::int8_t(int(next(seed) % 255) - 127);
  for (auto& v : x) v = std::int8_t(int(next(seed) % 256) - 128);
  emha::MhaS8Weights w;
  emha::ProjectionS8* p[4] = {&w.q, &w.k, &w.v, &w.out};
  for (int i = 0; i < 4; ++i) {
    for (std::size_t j = 0; j < d; ++j) {
      bias[i][j] = std::int32_t(next(seed) % 4096) - 2048;
      multiplier[i][j] = {std::int32_t((1u << 30) + next(seed) % (1u << 24)), -7};
    }
    *p[i] = {{weight[i], d * d}, {bias[i], d}, {multiplier[i], d}};
  }
  w.zero_point_query = w.zero_point_key = w.zero_point_value = -3;
  w.zero_point_q = 5, w.zero_point_k = -7, w.zero_point_v = 2, w.zero_point_scores = 10, w.zero_point_context = -1;
  w.scores = {1 << 30, -8};
  w.softmax = {1 << 30, 21, -3968};
  w.context = {1 << 30, -9};
  if (attention.set_weights(w) != emha::Status::ok) return 1;
  emha::ForwardOptionsS8 options;
  options.masks.causal = true;
  for (int r = 0; r < EMHA_ICOUNT_REPS; ++r)
    if (attention.forward({seq, seq, 1}, x, x, x, y, options) != emha::Status::ok) return 1;
  return 0;
}
#elif EMHA_ICOUNT_KIND == 2
struct Layer : emha::MhaConfig<d, 4, seq> {
  static constexpr emha::Arithmetic arithmetic = emha::Arithmetic::s16x8;
};
std::int8_t weight[4][d * d];
std::int16_t x[seq * d], y[seq * d];
std::int64_t bias[4][d];
emha::QuantizedMultiplier multiplier[4][d];

int run() {
  static emha::MultiHeadAttention<Layer> attention;
  std::uint32_t seed = 1;
  for (auto& w : weight)
    for (auto& v : w) v = std::int8_t(int(next(seed) % 255) - 127);
  for (auto& v : x) v = std::int16_t(int(next(seed) % 65536) - 32768);
  emha::MhaS16x8Weights w;
  emha::ProjectionS16x8* p[4] = {&w.q, &w.k, &w.v, &w.out};
  for (int i = 0; i < 4; ++i) {
    for (std::size_t j = 0; j < d; ++j) {
      bias[i][j] = std::int64_t(next(seed) % (1u << 20)) - (1 << 19);
      multiplier[i][j] = {std::int32_t((1u << 30) + next(seed) % (1u << 24)), -7};
    }
    *p[i] = {{weight[i], d * d}, {bias[i], d}, {multiplier[i], d}};
  }
  w.scores = {1 << 30, -16};
  w.softmax.input = {1 << 30, 2};
  w.context = {1 << 30, -9};
  if (attention.set_weights(w) != emha::Status::ok) return 1;
  emha::ForwardOptionsS16x8 options;
  options.masks.causal = true;
  for (int r = 0; r < EMHA_ICOUNT_REPS; ++r)
    if (attention.forward({seq, seq, 1}, x, x, x, y, options) != emha::Status::ok) return 1;
  return 0;
}
#else
struct Layer : emha::MhaConfig<d, 4, seq> {
  static constexpr bool prepack_weights = false;
};
float in_proj_weight[3 * d * d], in_proj_bias[3 * d], out_proj_weight[d * d], out_proj_bias[d];
float x[seq * d], y[seq * d];

void fill(float* p, std::size_t n, std::uint32_t& seed) {
  for (std::size_t i = 0; i < n; ++i) p[i] = float(next(seed)) / float(1u << 24) - 0.5f;  // [-0.5, 0.5)
}

int run() {
  static emha::MultiHeadAttention<Layer> attention;
  std::uint32_t seed = 1;
  fill(in_proj_weight, 3 * d * d, seed);
  fill(in_proj_bias, 3 * d, seed);
  fill(out_proj_weight, d * d, seed);
  fill(out_proj_bias, d, seed);
  fill(x, seq * d, seed);
  emha::MhaWeights w;
  w.in_proj_weight = in_proj_weight;
  w.in_proj_bias = in_proj_bias;
  w.out_proj_weight = out_proj_weight;
  w.out_proj_bias = out_proj_bias;
  if (attention.set_weights(w) != emha::Status::ok) return 1;
  emha::ForwardOptions options;
  options.masks.causal = true;
  for (int r = 0; r < EMHA_ICOUNT_REPS; ++r)
    if (attention.forward({seq, seq, 1}, x, x, x, y, options) != emha::Status::ok) return 1;
  return 0;
}
#endif
}  // namespace

int main() { return run(); }

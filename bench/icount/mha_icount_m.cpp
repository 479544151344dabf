// SPDX-License-Identifier: Apache-2.0
// Firmware for counting the instructions of MultiHeadAttention::forward on a Cortex-M under
// qemu-system-arm (bench/icount/mha_icount_m.sh): the reference config of the device benchmark
// (MhaConfig<64, 4, 32>, weights read in place, causal self-attention over 32 tokens), forward
// run EMHA_ICOUNT_REPS times. Built with 1 and with 3: half the difference of the two counts is
// one forward, start-up and set-up cancelled.

#include <cstddef>
#include <cstdint>

#include "emha/emha.hpp"

#ifndef EMHA_ICOUNT_REPS
#define EMHA_ICOUNT_REPS 1
#endif

namespace {
constexpr std::size_t d = 64, seq = 32;
float in_proj_weight[3 * d * d], in_proj_bias[3 * d], out_proj_weight[d * d], out_proj_bias[d];
float x[seq * d], y[seq * d];

struct Reference : emha::MhaConfig<d, /*heads*/ 4, seq> {
  static constexpr bool prepack_weights = false;
};
emha::MultiHeadAttention<Reference> attention;

void fill(float* p, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    p[i] = float(seed >> 8) / float(1u << 24) - 0.5f;  // [-0.5, 0.5)
  }
}
}  // namespace

int main() {
  fill(in_proj_weight, 3 * d * d, 1);
  fill(in_proj_bias, 3 * d, 2);
  fill(out_proj_weight, d * d, 3);
  fill(out_proj_bias, d, 4);
  fill(x, seq * d, 5);
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

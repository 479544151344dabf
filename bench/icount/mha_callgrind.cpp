// SPDX-License-Identifier: Apache-2.0
// MultiHeadAttention::forward `reps` times on one of the benchmark's four configs, for counting
// executed instructions under valgrind --tool=callgrind (mha_callgrind.sh):
//   mha_callgrind <32|64|128|256> <reps>      (S, D, H) = (32,64,4) (64,128,4) (128,256,8) (256,512,8)
// Instructions per forward = (count(reps = 3) - count(reps = 1)) / 2, which cancels set-up.
// Deterministic: the same binary and inputs give the same count whatever else the machine does,
// so it shows a change of the code where this shared machine's timings cannot.

#include <cstdio>
#include <cstdlib>

#include "emha/emha.hpp"

namespace {

template <std::size_t D, std::size_t H, std::size_t S>
int run(int reps) {
  using Mha = emha::MultiHeadAttention<emha::MhaConfig<D, H, S>>;
  static float w_in[3 * D * D], b_in[3 * D], w_out[D * D], b_out[D], x[S * D], y[S * D];
  unsigned state = 1;  // small deterministic values (an LCG), as the timing benchmark uses
  const auto next = [&state](float scale) {
    state = state * 1664525u + 1013904223u;
    return scale * (float(state >> 8) / float(1u << 24) - 0.5f);
  };
  for (float& v : w_in) v = next(0.2f);
  for (float& v : w_out) v = next(0.2f);
  for (float& v : b_in) v = next(0.1f);
  for (float& v : b_out) v = next(0.1f);
  for (float& v : x) v = next(1.0f);
  static Mha mha;
  emha::MhaWeights w;
  w.in_proj_weight = w_in;
  w.in_proj_bias = b_in;
  w.out_proj_weight = w_out;
  w.out_proj_bias = b_out;
  if (mha.set_weights(w) != emha::Status::ok) return 1;
  for (int r = 0; r < reps; ++r)
    if (mha.forward({S, S}, x, x, x, y) != emha::Status::ok) return 1;
  return y[0] == y[0] ? 0 : 1;  // NaN would mean a broken forward
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <32|64|128|256> <reps>\n", argv[0]);
    return 2;
  }
  const int s = std::atoi(argv[1]), reps = std::atoi(argv[2]);
  switch (s) {
    case 32: return run<64, 4, 32>(reps);
    case 64: return run<128, 4, 64>(reps);
    case 128: return run<256, 8, 128>(reps);
    case 256: return run<512, 8, 256>(reps);
  }
  return 2;
}

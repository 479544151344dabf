// SPDX-License-Identifier: Apache-2.0
// What emha costs a firmware, built twice: with EMHA_FOOTPRINT_MHA, one MultiHeadAttention of the
// reference config (weights read in place, a causal self-attention forward); without, the same
// start-up code and the same weight and activation buffers, no emha. tests/cross.sh prints `size`
// of both: the difference is emha's code and constants (flash) and the object with its arena
// plus the port's state (RAM). The buffers sit in .bss in both builds, so they cancel out.

#include <cstddef>

// External linkage: the baseline must keep them too (it only reads them).
namespace footprint {
constexpr std::size_t d = 64, seq = 32;
float in_proj_weight[3 * d * d], in_proj_bias[3 * d], out_proj_weight[d * d], out_proj_bias[d];
float x[seq * d], y[seq * d];
}  // namespace footprint
using namespace footprint;

#ifdef EMHA_FOOTPRINT_MHA
#include "emha/emha.hpp"

namespace {
struct Reference : emha::MhaConfig<d, /*heads*/ 4, seq> {
  static constexpr bool prepack_weights = false;  // weights stay where they are (flash)
};
emha::MultiHeadAttention<Reference> attention;
}  // namespace

int main() {
  emha::MhaWeights w;
  w.in_proj_weight = in_proj_weight;
  w.in_proj_bias = in_proj_bias;
  w.out_proj_weight = out_proj_weight;
  w.out_proj_bias = out_proj_bias;
  if (attention.set_weights(w) != emha::Status::ok) return 1;
  emha::ForwardOptions options;
  options.masks.causal = true;
  return attention.forward({seq, seq, 1}, x, x, x, y, options) == emha::Status::ok ? 0 : 1;
}
#else
int main() {
  volatile float keep = in_proj_weight[0] + in_proj_bias[0] + out_proj_weight[0] + out_proj_bias[0] + x[0];
  y[0] = keep;
  return y[0] == 0.0f ? 0 : 1;
}
#endif

// SPDX-License-Identifier: Apache-2.0
// Links emha::emha and runs one small attention call: exit 0 only if it worked. On Cortex-M it
// reports through emha's semihosting console (printf would bring newlib's heap, which the heap
// gate refuses).
#include <emha/emha.hpp>

#include <cmath>

#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M'
#include "console.hpp"  // ports/cortex_m, on the include path of emha_cortex_m_executable()
static void report(const char* isa, std::size_t arena_bytes) {
  emha::cortex_m::Line() << "consumer: emha " << isa << ", arena "
                         << static_cast<unsigned long long>(arena_bytes) << " bytes: ok";
}
#else
#include <cstdio>
static void report(const char* isa, std::size_t arena_bytes) {
  std::printf("consumer: emha %s, arena %zu bytes: ok\n", isa, arena_bytes);
}
#endif

int main() {
  using Mha = emha::MultiHeadAttention<emha::MhaConfig<8, 2, 4>>;
  static float w_in[3 * 8 * 8], b_in[3 * 8], w_out[8 * 8], b_out[8], x[4 * 8], y[4 * 8];
  for (int i = 0; i < 8; ++i) w_out[i * 8 + i] = 1.0f;  // identity output projection
  for (int i = 0; i < 8; ++i) w_in[(16 + i) * 8 + i] = 1.0f;  // V = x
  for (int i = 0; i < 4 * 8; ++i) x[i] = 1.0f;
  static Mha mha;
  emha::MhaWeights w;
  w.in_proj_weight = w_in;
  w.in_proj_bias = b_in;
  w.out_proj_weight = w_out;
  w.out_proj_bias = b_out;
  if (mha.set_weights(w) != emha::Status::ok) return 1;
  if (mha.forward({4, 4}, x, x, x, y) != emha::Status::ok) return 1;
  // Every value row is all ones, so any convex combination of them is too.
  for (float v : y)
    if (std::fabs(v - 1.0f) > 1e-6f) return 1;
  report(emha::simd_isa(), Mha::arena_bytes);
  return 0;
}

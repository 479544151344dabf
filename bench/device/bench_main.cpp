// SPDX-License-Identifier: Apache-2.0
// emha on a Cortex-M board: gemm_f32 at attention-sized shapes and one MultiHeadAttention forward
// of the reference config, timed in cycles of the port's counter (DWT->CYCCNT on hardware).
// Run it on the board for numbers; tests/cross.sh runs it once under qemu as a smoke test only.

#include <cstddef>
#include <cstdint>
#include <new>

#include "cortex_m.hpp"
#include "emha/emha.hpp"
#include "micro_bench.hpp"

namespace {

using emha::cortex_m::Line;
namespace bench = emha::device_bench;

// The reference config: d_model 64, 4 heads, sequences of up to 32. With prepack_weights off the
// weights are read in place (from flash on a board); on, the object holds a packed copy in RAM.
template <bool Prepack>
struct Reference : emha::MhaConfig<64, 4, 32> {
  static constexpr bool prepack_weights = Prepack;
};
using InPlace = emha::MultiHeadAttention<Reference<false>>;
using Packed = emha::MultiHeadAttention<Reference<true>>;
constexpr std::size_t d = 64, seq = 32;

float g_in_proj_weight[3 * d * d], g_in_proj_bias[3 * d], g_out_proj_weight[d * d], g_out_proj_bias[d];
float g_x[seq * d], g_y[seq * d];
// One slot for whichever MultiHeadAttention is being timed (each holds its arena): RAM for one.
constexpr std::size_t slot_bytes = sizeof(Packed) > sizeof(InPlace) ? sizeof(Packed) : sizeof(InPlace);
alignas(64) unsigned char g_slot[slot_bytes];

// GEMM operands for up to [seq x 3d] = [seq x d] * [d x 3d].
float g_a[seq * d], g_b[d * 3 * d], g_c[seq * 3 * d];
emha::StaticArena<emha::gemm_f32_scratch_bytes(seq, 3 * d, d)> g_scratch;

void fill(float* p, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    p[i] = float(seed >> 8) / float(1u << 24) - 0.5f;  // [-0.5, 0.5)
  }
}

int g_errors = 0;  // calls that did not return ok: the exit status

void bench_gemm(const char* name, std::size_t m, std::size_t n, std::size_t k, emha::Trans trans) {
  const auto call = [=] {
    return emha::gemm_f32(m, n, k, g_a, k, g_b, trans == emha::Trans::none ? n : k, trans, g_c, n, g_scratch);
  };
  if (call() != emha::Status::ok) {
    Line() << name << ": gemm_f32 failed";
    ++g_errors;
    return;
  }
  bench::run(name, 2.0 * double(m) * double(n) * double(k), call);
}

template <class Mha>
void bench_mha(const char* name) {
  static_assert(sizeof(Mha) <= sizeof(g_slot) && alignof(Mha) <= 64, "slot too small");
  Mha& mha = *new (g_slot) Mha;  // placement: no heap
  emha::MhaWeights w;
  w.in_proj_weight = g_in_proj_weight;
  w.in_proj_bias = g_in_proj_bias;
  w.out_proj_weight = g_out_proj_weight;
  w.out_proj_bias = g_out_proj_bias;
  if (mha.set_weights(w) != emha::Status::ok) {
    Line() << name << ": set_weights failed";
    ++g_errors;
    return;
  }
  // Projections 3 * S*d*d + output S*d*d, scores and P*V 2 * S*S*d: 2 FLOP per multiply-add.
  const double flops = 2.0 * (4.0 * seq * d * d + 2.0 * seq * seq * d);
  emha::ForwardOptions options;
  options.masks.causal = true;
  const auto call = [&] { return mha.forward({seq, seq, 1}, g_x, g_x, g_x, g_y, options); };
  if (call() != emha::Status::ok) {
    Line() << name << ": forward failed";
    ++g_errors;
  } else {
    bench::run(name, flops, call);
  }
  mha.~Mha();
}

}  // namespace

int main() {
  fill(g_a, seq * d, 1);
  fill(g_b, d * 3 * d, 2);
  fill(g_in_proj_weight, 3 * d * d, 3);
  fill(g_in_proj_bias, 3 * d, 4);
  fill(g_out_proj_weight, d * d, 5);
  fill(g_out_proj_bias, d, 6);
  fill(g_x, seq * d, 7);
  emha::port::cycles();  // start the counter, to name it below

  Line() << "emha device bench: port " << emha::port::name() << ", kernels " << emha::simd_isa()
         << ", counter " << emha::cortex_m::cycle_counter() << " at "
         << static_cast<unsigned long long>(emha::port::cycles_per_second()) << " Hz";
  Line() << "NOTE: under qemu these timings are meaningless (no pipeline or cache model; SysTick "
            "follows host time). Run on the board.";
  Line() << "MhaConfig<64,4,32>: arena_bytes " << static_cast<unsigned>(Packed::arena_bytes)
         << " (pre-packed) / " << static_cast<unsigned>(InPlace::arena_bytes) << " (in place), packed_weight_bytes "
         << static_cast<unsigned>(Packed::packed_weight_bytes) << ", sizeof object "
         << static_cast<unsigned>(sizeof(Packed)) << " / " << static_cast<unsigned>(sizeof(InPlace));

  bench_gemm("gemm_f32 32x32x32", 32, 32, 32, emha::Trans::none);
  bench_gemm("gemm_f32 32x192x64 x*W^T (QKV projection)", 32, 192, 64, emha::Trans::transpose);
  bench_gemm("gemm_f32 32x32x16 Q*K^T (one head)", 32, 32, 16, emha::Trans::transpose);
  bench_mha<InPlace>("MultiHeadAttention<64,4,32> forward, S=32 causal, weights in place");
  bench_mha<Packed>("MultiHeadAttention<64,4,32> forward, S=32 causal, pre-packed");
  return g_errors;
}

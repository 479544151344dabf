// One side of the A/B comparison (bench/ab/ab.sh): emha's public API behind ab_side.h's C entry
// points, compiled against the revision under test. The same file serves both sides, so inputs
// are bit-identical and outputs can be compared.

#include "ab_side.h"

#include <chrono>
#include <cstdint>
#include <vector>

#include "emha/emha.hpp"

#define AB_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Deterministic inputs in [lo, hi): a 64-bit LCG, the same on both sides.
std::vector<float> uniform(std::size_t n, std::uint64_t seed, float lo, float hi) {
  std::vector<float> v(n);
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (float& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = lo + (hi - lo) * float(s >> 40) / float(1u << 24);
  }
  return v;
}

// The benchmark's four configs (bench/attention/mha_cases.hpp): one static object each.
template <std::size_t S, std::size_t D, std::size_t H>
struct MhaCase {
  using Mha = emha::MultiHeadAttention<emha::MhaConfig<D, H, S>>;
  Mha mha;
  std::vector<float> w_in = uniform(3 * D * D, 1, -0.05f, 0.05f), b_in = uniform(3 * D, 2, -0.1f, 0.1f),
                     w_out = uniform(D * D, 3, -0.05f, 0.05f), b_out = uniform(D, 4, -0.1f, 0.1f),
                     x = uniform(S * D, 5, -1.0f, 1.0f);
  bool ready = false;

  static MhaCase& get() {
    static MhaCase c;
    return c;
  }
  double run(int iters, float* out) {
    if (!ready) {
      emha::MhaWeights w;
      w.in_proj_weight = {w_in.data(), w_in.size()};
      w.in_proj_bias = {b_in.data(), b_in.size()};
      w.out_proj_weight = {w_out.data(), w_out.size()};
      w.out_proj_bias = {b_out.data(), b_out.size()};
      if (mha.set_weights(w) != emha::Status::ok) return -1.0;
      ready = true;
    }
    const emha::Span<const float> in{x.data(), x.size()};
    const Clock::time_point t0 = Clock::now();
    for (int i = 0; i < iters; ++i)
      if (mha.forward({S, S, 1}, in, in, in, {out, S * D}) != emha::Status::ok) return -1.0;
    return seconds_since(t0) / (iters > 0 ? iters : 1);
  }
};

struct MhaEntry {
  std::size_t seq, d_model, heads;
  double (*run)(int, float*);
};
template <std::size_t S, std::size_t D, std::size_t H>
MhaEntry entry() {
  return {S, D, H, [](int iters, float* out) { return MhaCase<S, D, H>::get().run(iters, out); }};
}
const MhaEntry mha_cases[] = {entry<32, 64, 4>(), entry<64, 128, 4>(), entry<128, 256, 8>(),
                              entry<256, 512, 8>()};

emha::Trans trans_of(const AbGemm* g) { return g->trans_b ? emha::Trans::transpose : emha::Trans::none; }
std::size_t ldb_of(const AbGemm* g) { return g->trans_b ? g->k : g->n; }

}  // namespace

AB_EXPORT void ab_gemm_sizes(const AbGemm* g, size_t* scratch_bytes, size_t* packed_floats) {
  *scratch_bytes = emha::gemm_f32_scratch_bytes(g->m, g->n, g->k);
  *packed_floats = g->prepacked ? emha::gemm_f32_packed_b_floats(g->n, g->k) : 0;
}

AB_EXPORT int ab_gemm_prepare(const AbGemm* g, float* packed, size_t packed_floats) {
  if (!g->prepacked) return 0;
  return emha::gemm_f32_pack_b(g->n, g->k, g->b, ldb_of(g), trans_of(g), packed, packed_floats) ==
                 emha::Status::ok ? 0 : 1;
}

AB_EXPORT double ab_gemm_run(const AbGemm* g, const float* packed, void* scratch,
                             size_t scratch_bytes, int iters) {
  emha::ArenaRef arena(scratch, scratch_bytes);
  const Clock::time_point t0 = Clock::now();
  for (int i = 0; i < iters; ++i) {
    const emha::Status s =
        g->prepacked ? emha::gemm_f32_prepacked(g->m, g->n, g->k, g->a, g->k, packed, g->c, g->n)
                     : emha::gemm_f32(g->m, g->n, g->k, g->a, g->k, g->b, ldb_of(g), trans_of(g),
                                      g->c, g->n, arena);
    if (s != emha::Status::ok) return -1.0;
  }
  return seconds_since(t0) / (iters > 0 ? iters : 1);
}

AB_EXPORT int ab_mha_count(void) { return int(sizeof mha_cases / sizeof mha_cases[0]); }

AB_EXPORT void ab_mha_config(int i, size_t* seq, size_t* d_model, size_t* heads) {
  *seq = mha_cases[i].seq;
  *d_model = mha_cases[i].d_model;
  *heads = mha_cases[i].heads;
}

AB_EXPORT double ab_mha_run(int i, int iters, float* out) { return mha_cases[i].run(iters, out); }

// SPDX-License-Identifier: Apache-2.0
// One side of the A/B comparison (bench/ab/ab.sh): emha's public API behind ab_side.h's C entry
// points, compiled against the revision under test. The same file serves both sides, so inputs
// are bit-identical and outputs can be compared.

#include "ab_side.h"

#include <chrono>

#include "attention/mha_cases.hpp"
#include "emha/emha.hpp"

#define AB_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The benchmark's four configs and inputs (bench/attention/mha_cases.hpp), each with its static
// MultiHeadAttention; weights are set on the first run.
struct MhaEntry {
  std::size_t seq, d_model, heads;
  double (*run)(int, float*);
};
template <std::size_t S, std::size_t D, std::size_t H>
MhaEntry entry() {
  return {S, D, H, [](int iters, float* out) {
            using Case = emha_bench::EmhaFor<S, D, H>;
            static const emha_bench::MhaProblem problem = emha_bench::make_mha_problem(S, D, H, 1);
            static const bool ready = Case::set_weights(problem) == emha::Status::ok;
            if (!ready) return -1.0;
            const Clock::time_point t0 = Clock::now();
            for (int i = 0; i < iters; ++i)
              if (Case::forward(problem, out) != emha::Status::ok) return -1.0;
            return seconds_since(t0) / (iters > 0 ? iters : 1);
          }};
}
const MhaEntry mha_cases[] = {entry<32, 64, 4>(), entry<64, 128, 4>(), entry<128, 256, 8>(),
                              entry<256, 512, 8>()};

emha::Trans trans_of(const AbGemm* g) { return g->trans_b ? emha::Trans::transpose : emha::Trans::none; }
std::size_t ldb_of(const AbGemm* g) { return g->trans_b ? g->k : g->n; }

}  // namespace

AB_EXPORT int ab_select_isa(const char* isa) {
  return emha::select_simd_isa(isa) == emha::Status::ok ? 0 : 1;
}

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
        g->prepacked ? emha::gemm_f32_prepacked(g->m, g->n, g->k, g->a, g->k, packed,
                                                emha::gemm_f32_packed_b_floats(g->n, g->k), g->c, g->n)
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

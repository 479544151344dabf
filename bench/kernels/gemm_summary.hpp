// SPDX-License-Identifier: Apache-2.0
#pragma once
// bench_gemm's human-readable summary: per shape, GFLOP/s and % of the FMA peak of emha and each
// peer, and the peers' time over emha's.

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "support/bench_main.hpp"

namespace emha_bench {

struct GemmSummaryRow {
  std::string name;  // benchmark name prefix, e.g. "gemm_f32/nt/64x384x128"
  double flop = 0.0; // 2*M*N*K
};

// One line per row whose "<name>/emha" ran; columns for the implementations in `impls`
// ("emha" first; names starting with "emha" are emha's variants, the rest peers), "n/a" where
// one did not run (peer not built or filtered out): GFLOP/s and % of the start-up peak each,
// every peer's time over every emha variant's, and each variant's % of the interleaved run
// peak (Peaks::run_median).
void print_gemm_summary(std::FILE* out, const std::vector<GemmSummaryRow>& rows,
                        const std::vector<std::string>& impls,
                        const std::map<std::string, Measured>& results, const Peaks& peaks);

}  // namespace emha_bench

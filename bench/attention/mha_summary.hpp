// SPDX-License-Identifier: Apache-2.0
#pragma once
// The MHA benchmark's human-readable summary table (one row per config).

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "support/bench_main.hpp"

namespace emha_bench {

struct MhaSummaryRow {
  std::string name;          // benchmark name prefix, e.g. "mha_forward/S:32/D:64/H:4"
  double flop = 0.0;         // FLOP of one forward
  std::size_t arena_bytes = 0;
  double dev_reference = 0.0;  // max |forward - forward_reference|
};

// Prints, per row: median latency (µs of CPU time), GFLOP/s, % of the FMA peak (start-up best and
// the interleaved run median, see Peaks), arena bytes, max deviation
// from the scalar reference, the Eigen peer's median latency and the ratio eigen time / emha time
// (> 1: emha is faster). Rows whose benchmark did not run (filtered out) are skipped.
void print_mha_summary(std::FILE* out, const std::vector<MhaSummaryRow>& rows,
                       const std::map<std::string, Measured>& results, const Peaks& peaks);

// Prints, per row: wall-time medians of forward() on one thread and split over `workers`, and
// their ratio (the speedup). Nothing when only one worker runs.
void print_thread_summary(std::FILE* out, const std::vector<MhaSummaryRow>& rows,
                          const std::map<std::string, Measured>& results, std::size_t workers);

}  // namespace emha_bench

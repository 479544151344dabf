// SPDX-License-Identifier: Apache-2.0
#pragma once
// Which optional peers this build has. bench/CMakeLists.txt finds OpenBLAS and Eigen if present,
// defines EMHA_BENCH_HAVE_<PEER> to 0/1 and compiles a peer's files only when it has it; code
// elsewhere asks these constants (`if constexpr`) and never reads the macros itself.

#include <string>

#ifndef EMHA_BENCH_HAVE_OPENBLAS
#define EMHA_BENCH_HAVE_OPENBLAS 0
#endif
#ifndef EMHA_BENCH_HAVE_EIGEN
#define EMHA_BENCH_HAVE_EIGEN 0
#endif

namespace emha_bench {

inline constexpr bool have_openblas = EMHA_BENCH_HAVE_OPENBLAS != 0;
inline constexpr bool have_eigen = EMHA_BENCH_HAVE_EIGEN != 0;

// Makes every peer single-threaded (openblas_set_num_threads(1); Eigen is built without OpenMP)
// and returns one line naming them, e.g. "OpenBLAS 0.3.21 (Haswell, 1 thread); Eigen 3.4.0",
// or "... OpenBLAS: not found (install libopenblas-dev)".
std::string init_peers();

}  // namespace emha_bench

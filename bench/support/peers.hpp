// SPDX-License-Identifier: Apache-2.0
#pragma once
// Which optional peers this build has. bench/CMakeLists.txt finds OpenBLAS, Eigen, oneDNN and
// XNNPACK if present,
// defines EMHA_BENCH_HAVE_<PEER> to 0/1 and compiles a peer's files only when it has it; code
// elsewhere asks these constants (`if constexpr`) and never reads the macros itself.

#include <string>

#ifndef EMHA_BENCH_HAVE_OPENBLAS
#define EMHA_BENCH_HAVE_OPENBLAS 0
#endif
#ifndef EMHA_BENCH_HAVE_EIGEN
#define EMHA_BENCH_HAVE_EIGEN 0
#endif
#ifndef EMHA_BENCH_HAVE_ONEDNN
#define EMHA_BENCH_HAVE_ONEDNN 0
#endif
#ifndef EMHA_BENCH_HAVE_XNNPACK
#define EMHA_BENCH_HAVE_XNNPACK 0
#endif

namespace emha_bench {

inline constexpr bool have_openblas = EMHA_BENCH_HAVE_OPENBLAS != 0;
inline constexpr bool have_eigen = EMHA_BENCH_HAVE_EIGEN != 0;
inline constexpr bool have_onednn = EMHA_BENCH_HAVE_ONEDNN != 0;
inline constexpr bool have_xnnpack = EMHA_BENCH_HAVE_XNNPACK != 0;

// Makes every peer single-threaded (openblas_set_num_threads(1); Eigen is built without OpenMP;
// oneDNN's OpenMP runtime: omp_set_num_threads(1); XNNPACK: no threadpool), holds oneDNN to the
// instruction set of emha's kernels (dnnl_set_max_cpu_isa: avx2 or avx512_core), initializes
// XNNPACK, and returns one line naming them, e.g. "OpenBLAS 0.3.21 (Haswell, 1 thread); Eigen
// 3.4.0; ...", or "... OpenBLAS: not found (install libopenblas-dev)". Call it after
// emha::select_simd_isa, before any oneDNN primitive is created.
std::string init_peers();

}  // namespace emha_bench

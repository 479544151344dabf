// SPDX-License-Identifier: Apache-2.0
// Peer set-up and description: the one file that includes every optional peer's header.

#include "support/peers.hpp"

#include <string>

#if EMHA_BENCH_HAVE_OPENBLAS
#include <cblas.h>
#endif
#if EMHA_BENCH_HAVE_EIGEN
#include <Eigen/Core>
#endif
#if EMHA_BENCH_HAVE_ONEDNN
#include <omp.h>

#include <cstring>

#include <oneapi/dnnl/dnnl.h>

#include "emha/simd.hpp"
#endif
#if EMHA_BENCH_HAVE_XNNPACK
#include <xnnpack.h>
#endif

namespace emha_bench {
namespace {

#if EMHA_BENCH_HAVE_ONEDNN
// Debian builds oneDNN's CPU runtime on OpenMP: one OpenMP thread, and its kernels held
// to emha's instruction set, as OpenBLAS's are by bench/run.sh.
std::string init_onednn() {
  omp_set_num_threads(1);
  const char* isa = emha::simd_isa();
  dnnl_cpu_isa_t max_isa = dnnl_cpu_isa_all;
  if (std::strcmp(isa, "avx512") == 0) max_isa = dnnl_cpu_isa_avx512_core;
  if (std::strcmp(isa, "avx2") == 0) max_isa = dnnl_cpu_isa_avx2;
  if (std::strcmp(isa, "sse2") == 0) max_isa = dnnl_cpu_isa_sse41;  // oneDNN's lowest x86 level
  const bool pinned = max_isa != dnnl_cpu_isa_all && dnnl_set_max_cpu_isa(max_isa) == dnnl_success;
  const char* effective = "other";
  switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_sse41: effective = "sse41"; break;
    case dnnl_cpu_isa_avx: effective = "avx"; break;
    case dnnl_cpu_isa_avx2: effective = "avx2"; break;
    case dnnl_cpu_isa_avx512_core: effective = "avx512_core"; break;
    case dnnl_cpu_isa_avx512_core_vnni: effective = "avx512_core_vnni"; break;
    case dnnl_cpu_isa_avx512_core_bf16: effective = "avx512_core_bf16"; break;
    case dnnl_cpu_isa_avx512_core_amx: effective = "avx512_core_amx"; break;
    default: break;
  }
  const dnnl_version_t* v = dnnl_version();
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch) + " (matmul, ISA " + effective + (pinned ? " as emha's" : "") +
         ", " + std::to_string(omp_get_max_threads()) + " OpenMP thread)";
}
#endif

}  // namespace

std::string init_peers() {
  std::string s;
#if EMHA_BENCH_HAVE_OPENBLAS
  openblas_set_num_threads(1);
  s += std::string(openblas_get_config()) + " (core " + openblas_get_corename() + ", " +
       std::to_string(openblas_get_num_threads()) + " thread)";
#else
  s += "OpenBLAS: skipped at configure time (its line there says why; apt-get install libopenblas-dev)";
#endif
  s += "; ";
#if EMHA_BENCH_HAVE_EIGEN
  s += "Eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." + std::to_string(EIGEN_MAJOR_VERSION) +
       "." + std::to_string(EIGEN_MINOR_VERSION) + " (" + Eigen::SimdInstructionSetsInUse() +
       ", 1 thread)";
#else
  s += "Eigen: skipped at configure time (its line there says why; apt-get install libeigen3-dev)";
#endif
  s += "; ";
#if EMHA_BENCH_HAVE_ONEDNN
  s += init_onednn();
#else
  s += "oneDNN: skipped at configure time (its line there says why; apt-get install libdnnl-dev)";
#endif
  s += "; ";
#if EMHA_BENCH_HAVE_XNNPACK
  s += xnn_initialize(nullptr) == xnn_status_success
           ? "XNNPACK (fully connected, its own ISA choice, caller's thread)"
           : "XNNPACK: xnn_initialize failed (unsupported hardware)";
#else
  s += "XNNPACK: skipped at configure time (its line there says why; apt-get install libxnnpack-dev libpthreadpool-dev)";
#endif
  return s;
}

}  // namespace emha_bench

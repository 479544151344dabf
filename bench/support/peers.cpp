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

namespace emha_bench {

std::string init_peers() {
  std::string s;
#if EMHA_BENCH_HAVE_OPENBLAS
  openblas_set_num_threads(1);
  s += std::string(openblas_get_config()) + " (core " + openblas_get_corename() + ", " +
       std::to_string(openblas_get_num_threads()) + " thread)";
#else
  s += "OpenBLAS: not found at configure time (apt-get install libopenblas-dev)";
#endif
  s += "; ";
#if EMHA_BENCH_HAVE_EIGEN
  s += "Eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." + std::to_string(EIGEN_MAJOR_VERSION) +
       "." + std::to_string(EIGEN_MINOR_VERSION) + " (" + Eigen::SimdInstructionSetsInUse() +
       ", 1 thread)";
#else
  s += "Eigen: not found at configure time (apt-get install libeigen3-dev)";
#endif
  return s;
}

}  // namespace emha_bench

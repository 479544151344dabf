// SPDX-License-Identifier: Apache-2.0
// The peer probe's program (CMakeLists.txt beside it): includes one peer's header and calls it,
// so that the probe fails where the benchmarks would not build or link with that peer.
#if EMHA_PROBE_EIGEN3
#include <Eigen/Core>
int main() { return int(Eigen::Matrix2f::Identity().sum()) - 2; }
#elif EMHA_PROBE_OPENBLAS
#include <cblas.h>
int main() { return cblas_sdot(0, nullptr, 1, nullptr, 1) != 0.0f; }
#elif EMHA_PROBE_DNNL
#include <omp.h>

#include <oneapi/dnnl/dnnl.h>
int main() { return dnnl_version() == nullptr || omp_get_max_threads() < 1; }
#elif EMHA_PROBE_XNNPACK
#include <xnnpack.h>
int main() { return xnn_initialize(nullptr) == xnn_status_success ? 0 : 0; }
#endif

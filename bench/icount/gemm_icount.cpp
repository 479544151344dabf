// SPDX-License-Identifier: Apache-2.0
// One GEMM, `reps` times, for counting executed instructions under qemu (gemm_icount.sh):
//   gemm_icount <emha|eigen|openblas|xnnpack> <n> <reps>   C[n x n] = A[n x n] * B[n x n], f32
// Instructions per GEMM = (count(reps = 3) - count(reps = 1)) / 2, which cancels start-up (and
// XNNPACK's operator creation and weight packing, done once before the repetitions).

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "emha/emha.hpp"
#if defined(EMHA_ICOUNT_EIGEN)
#include <Eigen/Core>
#endif
#if defined(EMHA_ICOUNT_OPENBLAS)
#include <cblas.h>
#endif
#if defined(EMHA_ICOUNT_XNNPACK)
#include <xnnpack.h>
#endif

namespace {
emha::StaticArena<emha::gemm_f32_scratch_bytes(512, 512, 512)> scratch;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s <emha|eigen|openblas|xnnpack> <n> <reps>\n", argv[0]);
    return 2;
  }
  const char* who = argv[1];
  const std::size_t n = std::strtoul(argv[2], nullptr, 10);
  const int reps = std::atoi(argv[3]);
  if (n == 0 || n > 512) return 2;
  // a's padding: XNNPACK may read XNN_EXTRA_BYTES past its input.
  std::vector<float> a(n * n + 16, 0.5f), b(n * n, 0.25f), c(n * n, 0.0f);
#if defined(EMHA_ICOUNT_XNNPACK)
  // Fully connected, kernel b as [input x output] (XNN_FLAG_TRANSPOSE_WEIGHTS), no threadpool.
  xnn_operator_t fc = nullptr;
  if (std::strcmp(who, "xnnpack") == 0 &&
      (xnn_initialize(nullptr) != xnn_status_success ||
       xnn_create_fully_connected_nc_f32(n, n, n, n, b.data(), nullptr, -INFINITY, INFINITY,
                                         XNN_FLAG_TRANSPOSE_WEIGHTS, &fc) != xnn_status_success ||
       xnn_setup_fully_connected_nc_f32(fc, n, a.data(), c.data(), nullptr) != xnn_status_success))
    return 1;
#endif
  for (int r = 0; r < reps; ++r) {
    if (std::strcmp(who, "emha") == 0) {
      if (emha::gemm_f32(n, n, n, a.data(), n, b.data(), n, emha::Trans::none, c.data(), n, scratch) !=
          emha::Status::ok)
        return 1;
#if defined(EMHA_ICOUNT_EIGEN)
    } else if (std::strcmp(who, "eigen") == 0) {
      using M = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
      Eigen::Map<const M> ma(a.data(), n, n), mb(b.data(), n, n);
      Eigen::Map<M> mc(c.data(), n, n);
      mc.noalias() = ma * mb;
#endif
#if defined(EMHA_ICOUNT_OPENBLAS)
    } else if (std::strcmp(who, "openblas") == 0) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(n), int(n), int(n), 1.0f, a.data(), int(n),
                  b.data(), int(n), 0.0f, c.data(), int(n));
#endif
#if defined(EMHA_ICOUNT_XNNPACK)
    } else if (std::strcmp(who, "xnnpack") == 0) {
      if (xnn_run_operator(fc, nullptr) != xnn_status_success) return 1;
#endif
    } else {
      std::fprintf(stderr, "%s: not built into this binary\n", who);
      return 2;
    }
  }
  // Every element is n * 0.5 * 0.25: a wrong kernel cannot be counted as a fast one.
  for (float x : c)
    if (x != float(n) * 0.125f) return 1;
  return 0;
}

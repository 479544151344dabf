// SPDX-License-Identifier: Apache-2.0
// XNNPACK peer of emha::gemm_f32 (compiled only when XNNPACK was found): its f32 fully-connected
// operator per shape, created and set up before timing, run on the caller's thread.
// xnn_initialize is called once, in support/peers.cpp.

#include <xnnpack.h>

#include <cmath>

#include "kernels/gemm_peers.hpp"
#include "support/aligned.hpp"

namespace emha_bench {
namespace {

class XnnpackGemm final : public PreparedGemm {
 public:
  XnnpackGemm(std::size_t m, std::size_t n, std::size_t k, const float* a, const float* b,
              bool b_transposed, float* c)
      : a_(a, a + m * k) {
    a_.resize(m * k + XNN_EXTRA_BYTES / sizeof(float));
    // Without XNN_FLAG_TRANSPOSE_WEIGHTS the kernel is [output x input] = [n x k]: c = a * b^T.
    ok_ = xnn_create_fully_connected_nc_f32(k, n, k, n, b, nullptr, -INFINITY, INFINITY,
                                            b_transposed ? 0 : XNN_FLAG_TRANSPOSE_WEIGHTS,
                                            &op_) == xnn_status_success &&
          xnn_setup_fully_connected_nc_f32(op_, m, a_.data(), c, nullptr) == xnn_status_success;
  }
  ~XnnpackGemm() override {
    if (op_ != nullptr) xnn_delete_operator(op_);
  }
  XnnpackGemm(const XnnpackGemm&) = delete;
  XnnpackGemm& operator=(const XnnpackGemm&) = delete;

  bool ok() const { return ok_; }
  bool run() noexcept override { return xnn_run_operator(op_, nullptr) == xnn_status_success; }

 private:
  Floats a_;  // a, then XNN_EXTRA_BYTES of padding
  xnn_operator_t op_ = nullptr;
  bool ok_ = false;
};

}  // namespace

std::unique_ptr<PreparedGemm> prepare_xnnpack(std::size_t m, std::size_t n, std::size_t k,
                                              const float* a, const float* b, bool b_transposed,
                                              float* c) {
  auto gemm = std::make_unique<XnnpackGemm>(m, n, k, a, b, b_transposed, c);
  if (!gemm->ok()) return nullptr;
  return gemm;
}

}  // namespace emha_bench

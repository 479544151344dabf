// SPDX-License-Identifier: Apache-2.0
// oneDNN peer of emha::gemm_f32 (compiled only when oneDNN was found): a dnnl::matmul primitive
// per shape over the caller's row-major buffers, created before timing; one thread and emha's
// instruction set are set in support/peers.cpp.

#include <oneapi/dnnl/dnnl.hpp>

#include <unordered_map>

#include "kernels/gemm_peers.hpp"

namespace emha_bench {
namespace {

class OnednnGemm final : public PreparedGemm {
 public:
  OnednnGemm(std::size_t m, std::size_t n, std::size_t k, const float* a, const float* b,
             bool b_transposed, float* c)
      : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    using dims = dnnl::memory::dims;
    using tag = dnnl::memory::format_tag;
    const auto f32 = dnnl::memory::data_type::f32;
    const auto M = dnnl::memory::dim(m), N = dnnl::memory::dim(n), K = dnnl::memory::dim(k);
    const dnnl::memory::desc a_md(dims{M, K}, f32, tag::ab);
    // Weights are logically [K x N]; B^T stored [N x K] row-major is that matrix column-major.
    const dnnl::memory::desc b_md(dims{K, N}, f32, b_transposed ? tag::ba : tag::ab);
    const dnnl::memory::desc c_md(dims{M, N}, f32, tag::ab);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), engine_);
    matmul_ = dnnl::matmul(pd);
    args_ = {{DNNL_ARG_SRC, dnnl::memory(a_md, engine_, const_cast<float*>(a))},
             {DNNL_ARG_WEIGHTS, dnnl::memory(b_md, engine_, const_cast<float*>(b))},
             {DNNL_ARG_DST, dnnl::memory(c_md, engine_, c)}};
  }

  bool run() noexcept override {
    try {
      matmul_.execute(stream_, args_);
      stream_.wait();
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }

 private:
  dnnl::engine engine_;
  dnnl::stream stream_;
  dnnl::matmul matmul_;
  std::unordered_map<int, dnnl::memory> args_;  // built once: execute() only reads it
};

}  // namespace

std::unique_ptr<PreparedGemm> prepare_onednn(std::size_t m, std::size_t n, std::size_t k,
                                             const float* a, const float* b, bool b_transposed,
                                             float* c) {
  try {
    return std::make_unique<OnednnGemm>(m, n, k, a, b, b_transposed, c);
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

}  // namespace emha_bench

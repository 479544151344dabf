// SPDX-License-Identifier: Apache-2.0
#pragma once
// The GEMM benchmark's shapes: bench_gemm.cpp times them against the peers, ab/ab_main.cpp
// times them between two emha revisions.

#include <cstddef>

namespace emha_bench {

struct GemmShape {
  std::size_t m, n, k;
};

// Attention-projection shapes (S x 3D x D style, transformer FFN-ish, per-head QK^T and PV),
// then squares.
inline constexpr GemmShape gemm_shapes[] = {
    {64, 384, 128}, {128, 768, 256}, {256, 1536, 512}, {128, 128, 32}, {256, 256, 64},
    {128, 32, 128}, {16, 16, 16},    {32, 32, 32},     {64, 64, 64},   {128, 128, 128},
    {256, 256, 256}, {512, 512, 512},
};

}  // namespace emha_bench

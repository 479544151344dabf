#pragma once
// What instruction set this build of the kernels uses. The choice itself is made in one place,
// lib/src/simd_arch.hpp, from xsimd's configuration and the EMHA_SIMD option.

#include <cstddef>

namespace emha {

// "fma3+avx2", "avx512bw", "arm64+neon", "arm32+neon", ... or "scalar" (no SIMD: Cortex-M,
// armv6, EMHA_SIMD=OFF). Tests assert the expected value per target.
const char* simd_isa() noexcept;

// f32 lanes per vector register in the kernels (1 on the scalar path).
std::size_t simd_f32_lanes() noexcept;

}  // namespace emha

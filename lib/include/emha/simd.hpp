// SPDX-License-Identifier: Apache-2.0
#pragma once
// Which instruction set the kernels run on. On x86-64 the library carries AVX-512 with VNNI,
// AVX2+FMA with AVX-VNNI, AVX-512, AVX2+FMA and SSE2 variants and uses one chosen once, at the
// first call, from CPUID: AVX-512 where it is full width (Intel; AMD from Zen 5), AVX2+FMA on AMD
// Zen 4 and other AVX2 CPUs, SSE2 below; the full-integer kernels (gemm_s8, requantize_s8) take
// the AVX-512 VNNI variant wherever the CPU runs it, Zen 4 included, else the AVX-VNNI one where
// it runs (CMake EMHA_X86_ISA=dispatch, the default there; lib/src/dispatch/choice_x86.cpp says
// why).
// EMHA_X86_ISA=avx2|avx512|native|baseline builds one variant only, as does every other target
// (lib/src/simd_arch.hpp).

#include <cstddef>

#include "emha/status.hpp"

namespace emha {

// "avx512", "avx2", "sse2", "arm64+neon", "arm32+neon", ... or "scalar" (no SIMD:
// Cortex-M, armv6, EMHA_SIMD=OFF): the variant in use (choosing it if none is yet).
const char* simd_isa() noexcept;

// The variant the full-integer kernels run on (choosing it if none is yet): "avx512vnni" where
// the CPU runs it and select_simd_isa() pinned no other before, else "avx2vnni" where it runs,
// else simd_isa(). Integer results are the same on every variant.
const char* simd_isa_s8() noexcept;

// f32 lanes per vector register in the kernels of that variant (1 on the scalar path).
std::size_t simd_f32_lanes() noexcept;

// Pins the variant named `isa` (a simd_isa() value) for the rest of the process, for tests and
// benchmarks; no environment variable is read, ever. Call it before anything else of emha: the
// choice is made once and never changes (a first pin also pins the full-integer kernels', unless
// they already run). ok if that variant is (now) the one in use;
// invalid_argument if this build has no such variant, the CPU cannot run it, or another variant
// is already in use; null_pointer for a null name. Weights packed by set_weights() or
// gemm_f32_pack_b() belong to the variant in use (its panel width).
Status select_simd_isa(const char* isa) noexcept;

}  // namespace emha

// SPDX-License-Identifier: Apache-2.0
#pragma once
// Which instruction-set variant this translation unit is. Everything whose code depends on the
// instruction set (lib/src/kernels, lib/src/attention/mha_forward.cpp and the headers they
// include) is compiled once per variant, each time inside the inline namespace EMHA_ISA:
//   emha::simd::EMHA_ISA    vectors and their operations (simd_arch.hpp)
//   emha::detail::EMHA_ISA  kernels, micro-kernels, the forward pass (isa_kernels.hpp)
// so that no inline function, template instance or kernel of one variant shares a symbol with
// another's (the linker would keep one copy, possibly with instructions the CPU lacks). Within a
// variant the inline namespace is invisible: code reads as emha::simd and emha::detail.
// CMake defines EMHA_ISA per variant (isa_avx512, isa_avx2, isa_sse2 in the x86-64 run-time
// dispatch build); a build of one variant uses the default below.

#ifndef EMHA_ISA
#define EMHA_ISA isa_build
#endif

namespace emha::simd {
inline namespace EMHA_ISA {}
}  // namespace emha::simd
namespace emha::detail {
inline namespace EMHA_ISA {}
}  // namespace emha::detail

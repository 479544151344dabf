// SPDX-License-Identifier: Apache-2.0
#pragma once
// The kernel table in use (dispatch.cpp forwards every public call through it).
//   x86-64 with EMHA_X86_ISA=dispatch (the default there): the best variant this CPU runs,
//     chosen once from CPUID and XGETBV (choice_x86.cpp), or the one select_simd_isa() named.
//   every other build: its one variant; the table is a constexpr here, so the forwarding calls
//     in dispatch.cpp are direct (no indirect call on Cortex-M, where the stack bound counts).

#include "dispatch/kernel_table.hpp"

#if EMHA_X86_DISPATCH
namespace emha::detail {
const KernelTable& kernels() noexcept;
const KernelTable& kernels_s8() noexcept;  // the full-integer kernels' (choice_x86.cpp)
}  // namespace emha::detail
#else
#include "isa_kernels.hpp"
namespace emha::detail {
inline const KernelTable& kernels() noexcept { return kernel_table; }
inline const KernelTable& kernels_s8() noexcept { return kernel_table; }
}  // namespace emha::detail
#endif


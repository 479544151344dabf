// SPDX-License-Identifier: Apache-2.0
#pragma once
// The kernels and layer cores of one instruction-set variant (isa.hpp), one per line of
// kernel_list.def: declared here in emha::detail::EMHA_ISA with the public declarations' own
// types (decltype of a function is its type, noexcept included), so the two cannot drift apart;
// defined in lib/src/kernels/<op>_<type>.cpp and lib/src/attention/mha_forward.cpp; gathered
// into this variant's kernel_table. Inside a variant, detail::gemm_f32 means the variant's:
// calls are qualified, since argument-dependent lookup would also find the public emha::gemm_f32.

#include "dispatch/kernel_table.hpp"
#include "isa.hpp"
#include "simd_arch.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

#define EMHA_KERNEL(name, Ret, params, args) decltype(emha::name) name;
#define EMHA_LAYER(name, Ret, params, args) decltype(emha::detail::name) name;
#include "kernel_list.def"

inline constexpr KernelTable kernel_table{
    simd::isa, simd::lanes,
#define EMHA_KERNEL(name, Ret, params, args) &name,
#define EMHA_LAYER(name, Ret, params, args) &name,
#include "kernel_list.def"
};

}  // namespace EMHA_ISA
}  // namespace emha::detail

// SPDX-License-Identifier: Apache-2.0
// This instruction-set variant's kernel table, exported under its namespace's name
// (emha::detail::isa_avx2::variant_table, ...) for the run-time choice (choice_x86.cpp).
// Compiled once per variant, like the kernels.
//
// An integer-only variant (CMake defines EMHA_ISA_FLOAT: the VNNI ones, lib/CMakeLists.txt)
// compiles only the integer lines of kernel_list.def (EMHA_KERNEL_S8, EMHA_LAYER_S8); its table's
// float lines are those of EMHA_ISA_FLOAT, the variant whose float instructions it has.

#include "isa_kernels.hpp"

namespace emha::detail {

#ifdef EMHA_ISA_FLOAT
namespace EMHA_ISA_FLOAT {  // the float lines, defined in that variant's objects
#define EMHA_KERNEL(name, Ret, params, args) decltype(emha::name) name;
#define EMHA_KERNEL_S8(name, Ret, params, args)
#define EMHA_LAYER(name, Ret, params, args) decltype(emha::detail::EMHA_ISA::name) name;
#define EMHA_LAYER_S8(name, Ret, params, args)
#include "kernel_list.def"
}  // namespace EMHA_ISA_FLOAT
#endif

inline namespace EMHA_ISA {

#ifdef EMHA_ISA_FLOAT
constexpr KernelTable integer_only_table{
    simd::isa, simd::lanes,
#define EMHA_KERNEL(name, Ret, params, args) &EMHA_ISA_FLOAT::name,
#define EMHA_KERNEL_S8(name, Ret, params, args) &name,
#define EMHA_LAYER(name, Ret, params, args) &EMHA_ISA_FLOAT::name,
#define EMHA_LAYER_S8(name, Ret, params, args) &name,
#include "kernel_list.def"
};
const KernelTable& variant_table() noexcept { return integer_only_table; }
#else
const KernelTable& variant_table() noexcept { return kernel_table; }
#endif

}  // namespace EMHA_ISA
}  // namespace emha::detail

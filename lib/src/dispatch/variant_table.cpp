// SPDX-License-Identifier: Apache-2.0
// This instruction-set variant's kernel table, exported under its namespace's name
// (emha::detail::isa_avx2::variant_table, ...) for the run-time choice (choice_x86.cpp).
// Compiled once per variant, like the kernels.

#include "isa_kernels.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

const KernelTable& variant_table() noexcept { return kernel_table; }

}  // namespace EMHA_ISA
}  // namespace emha::detail

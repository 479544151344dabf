// SPDX-License-Identifier: Apache-2.0
#pragma once
// The entry points of one instruction-set variant, as function pointers: one slot per line of
// kernel_list.def, named as the line, typed as the public declaration. dispatch.cpp forwards every
// public call through the table of the variant in use (kernel_choice.hpp).

#include <cstddef>

#include "emha/detail/mha_plan.hpp"
#include "emha/detail/mha_s8_plan.hpp"
#include "emha/kernels/gemm.hpp"
#include "emha/kernels/gemm_s16.hpp"
#include "emha/kernels/gemm_s8.hpp"
#include "emha/kernels/requantize_s16.hpp"
#include "emha/kernels/requantize_s8.hpp"
#include "emha/kernels/softmax_s8.hpp"
#include "emha/kernels/gemm_w8a32.hpp"
#include "emha/kernels/mask.hpp"
#include "emha/kernels/norm.hpp"
#include "emha/kernels/quant.hpp"
#include "emha/kernels/rope.hpp"
#include "emha/kernels/softmax.hpp"

namespace emha::detail {

struct KernelTable {
  const char* isa;    // simd_isa() of the variant
  std::size_t lanes;  // simd_f32_lanes()
#define EMHA_KERNEL(name, Ret, params, args) decltype(&emha::name) name;
#define EMHA_LAYER(name, Ret, params, args) decltype(&emha::detail::name) name;
#include "kernel_list.def"
};

}  // namespace emha::detail

// SPDX-License-Identifier: Apache-2.0
#pragma once
// The kernels a layer runs on, as policy types (static members only), one member per line of
// kernel_list.def with the line's name and parameters:
//   SimdKernels  this variant's kernels (the SIMD path; the scalar one on targets without SIMD)
//   RefKernels   their scalar references: the oracle the tests and benchmarks measure against
// Each carries the element types it computes in (`types`): a family of another type (s8, f16)
// is a policy of its own over its own lines of the list.

#include "emha/kernels/gemm_ref.hpp"
#include "emha/kernels/gemm_s16_ref.hpp"
#include "emha/kernels/gemm_s8_ref.hpp"
#include "emha/kernels/requantize_s16_ref.hpp"
#include "emha/kernels/requantize_s8_ref.hpp"
#include "emha/kernels/softmax_s8_ref.hpp"
#include "emha/kernels/gemm_w8a32_ref.hpp"
#include "emha/kernels/mask_ref.hpp"
#include "emha/kernels/norm_ref.hpp"
#include "emha/kernels/quant_ref.hpp"
#include "emha/kernels/rope_ref.hpp"
#include "emha/kernels/softmax_ref.hpp"
#include "isa_kernels.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

// Weights, activations and accumulators all float32.
struct F32Types {
  using weight = float;
  using activation = float;
  using accumulator = float;
};

struct SimdKernels {
  using types = F32Types;
  // A decode step's GQA/MQA query heads of a group share one pass over their K/V head
  // (group_attention.hpp), through gemm_f32_rows: not where the stack is the budget (Cortex-M,
  // simd::lean_stack: head by head keeps its stack within budget).
  static constexpr bool stack_groups = !simd::lean_stack;
  static constexpr bool packed_weights = true;  // runs pre-packed panels (MhaPacked) when given
#define EMHA_KERNEL(name, Ret, params, args) \
  static Ret name params noexcept { return detail::name args; }
#define EMHA_KERNEL_PACKING(name, Ret, params, args)
#include "kernel_list.def"
};

struct RefKernels {
  using types = F32Types;
  static constexpr bool stack_groups = false;  // the oracle attends head by head, whatever the build
  // The oracle is never given pre-packed panels: its products link no pre-packed GEMM.
  static constexpr bool packed_weights = false;
#define EMHA_KERNEL(name, Ret, params, args) \
  static Ret name params noexcept { return name##_ref args; }
#define EMHA_KERNEL_PACKING(name, Ret, params, args)
#include "kernel_list.def"
};

}  // namespace EMHA_ISA
}  // namespace emha::detail

#pragma once
// The entry points of one instruction-set variant of emha's kernels and forward pass, as function
// pointers: lib/src/dispatch.cpp forwards every public kernel and MultiHeadAttention call through
// the table of the variant in use (kernel_choice.hpp). Signatures are those of the public
// declarations (emha/kernels/*.hpp, emha/attention/mha_plan.hpp).

#include <cstddef>

#include "emha/attention/mha_plan.hpp"
#include "emha/kernels/gemm.hpp"
#include "emha/kernels/mask.hpp"
#include "emha/kernels/norm.hpp"
#include "emha/kernels/rope.hpp"
#include "emha/kernels/softmax.hpp"

namespace emha::detail {

struct KernelTable {
  const char* isa;    // simd_isa(): "avx512bw", "fma3+avx2", "sse2", "arm64+neon", "scalar", ...
  std::size_t lanes;  // simd_f32_lanes()
  decltype(&emha::gemm_f32) gemm_f32;
  decltype(&emha::gemm_f32_pack_b) gemm_f32_pack_b;
  decltype(&emha::gemm_f32_prepacked) gemm_f32_prepacked;
  decltype(&emha::gemm_f32_rows) gemm_f32_rows;
  decltype(&emha::softmax_f32) softmax_f32;
  decltype(&emha::softmax_online_update_f32) softmax_online_update_f32;
  decltype(&emha::softmax_online_finish_f32) softmax_online_finish_f32;
  decltype(&emha::mask_causal_f32) mask_causal_f32;
  decltype(&emha::mask_key_valid_f32) mask_key_valid_f32;
  decltype(&emha::mask_key_ignore_f32) mask_key_ignore_f32;
  decltype(&emha::mask_bool_f32) mask_bool_f32;
  decltype(&emha::mask_bool_to_additive_f32) mask_bool_to_additive_f32;
  decltype(&emha::mask_add_f32) mask_add_f32;
  decltype(&emha::mask_alibi_f32) mask_alibi_f32;
  decltype(&emha::layer_norm_f32) layer_norm_f32;
  decltype(&emha::rms_norm_f32) rms_norm_f32;
  decltype(&emha::rope_f32) rope_f32;
  decltype(&emha::detail::mha_pack_weights) pack_weights;
  decltype(&emha::detail::mha_forward) forward;
  decltype(&emha::detail::mha_forward_ref) forward_ref;
};

}  // namespace emha::detail

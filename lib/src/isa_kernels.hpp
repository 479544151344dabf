#pragma once
// The kernels and the forward pass of one instruction-set variant (isa.hpp): declared here in
// emha::detail::EMHA_ISA with the public signatures (emha/kernels/*.hpp, mha_plan.hpp), defined
// in lib/src/kernels/*.cpp and lib/src/attention/mha_forward.cpp, and gathered into this
// variant's kernel_table. Inside a variant they are called unqualified (gemm_f32(...) means this
// variant's); the public emha::gemm_f32 and friends forward to the table (dispatch.cpp).

#include "isa.hpp"
#include "kernel_table.hpp"
#include "simd_arch.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

// Declared with the public functions' own types (decltype of a function is its type, noexcept
// included; default arguments are not part of it), so the two can never drift apart.
decltype(emha::gemm_f32) gemm_f32;
decltype(emha::gemm_f32_pack_b) gemm_f32_pack_b;
decltype(emha::gemm_f32_prepacked) gemm_f32_prepacked;
decltype(emha::gemm_f32_rows) gemm_f32_rows;
decltype(emha::softmax_f32) softmax_f32;
decltype(emha::softmax_online_update_f32) softmax_online_update_f32;
decltype(emha::softmax_online_finish_f32) softmax_online_finish_f32;
decltype(emha::mask_causal_f32) mask_causal_f32;
decltype(emha::mask_key_valid_f32) mask_key_valid_f32;
decltype(emha::mask_key_ignore_f32) mask_key_ignore_f32;
decltype(emha::mask_bool_f32) mask_bool_f32;
decltype(emha::mask_bool_to_additive_f32) mask_bool_to_additive_f32;
decltype(emha::mask_add_f32) mask_add_f32;
decltype(emha::mask_alibi_f32) mask_alibi_f32;
decltype(emha::layer_norm_f32) layer_norm_f32;
decltype(emha::rms_norm_f32) rms_norm_f32;
decltype(emha::rope_f32) rope_f32;
// mha_pack_weights, mha_forward, mha_forward_ref of this variant (those names are the public
// entry points in emha::detail; inside it, these would be ambiguous with them).
decltype(emha::detail::mha_pack_weights) pack_weights;
decltype(emha::detail::mha_forward) forward_pass;
decltype(emha::detail::mha_forward_ref) forward_pass_ref;

inline constexpr KernelTable kernel_table{
    simd::isa,          simd::lanes,
    &gemm_f32,          &gemm_f32_pack_b,          &gemm_f32_prepacked,
    &gemm_f32_rows,
    &softmax_f32,       &softmax_online_update_f32, &softmax_online_finish_f32,
    &mask_causal_f32,   &mask_key_valid_f32,       &mask_key_ignore_f32,
    &mask_bool_f32,     &mask_bool_to_additive_f32, &mask_add_f32,
    &mask_alibi_f32,
    &layer_norm_f32,    &rms_norm_f32,              &rope_f32,
    &pack_weights,      &forward_pass,             &forward_pass_ref,
};

}  // namespace EMHA_ISA
}  // namespace emha::detail

// SPDX-License-Identifier: Apache-2.0
// emha's public kernels and MultiHeadAttention's compiled core (kernel_list.def), forwarded to the
// instruction-set variant in use (kernel_choice.hpp): one call through the table on x86-64's
// run-time dispatch, a direct (tail) call everywhere else.

#include <cstring>

#include "dispatch/kernel_choice.hpp"
#include "emha/simd.hpp"

namespace emha {

const char* simd_isa() noexcept { return detail::kernels().isa; }
const char* simd_isa_s8() noexcept { return detail::kernels_s8().isa; }
std::size_t simd_f32_lanes() noexcept { return detail::kernels().lanes; }

#define EMHA_KERNEL(name, Ret, params, args) \
  Ret name params noexcept { return detail::kernels().name args; }
#define EMHA_KERNEL_S8(name, Ret, params, args) \
  Ret name params noexcept { return detail::kernels_s8().name args; }
#include "kernel_list.def"

}  // namespace emha

namespace emha::detail {

#define EMHA_KERNEL(name, Ret, params, args)
#define EMHA_KERNEL_PACKING(name, Ret, params, args)
#define EMHA_LAYER(name, Ret, params, args) \
  Ret name params noexcept { return kernels().name args; }
#define EMHA_LAYER_S8(name, Ret, params, args) \
  Ret name params noexcept { return kernels_s8().name args; }
#include "kernel_list.def"

#if EMHA_X86_DISPATCH
// Every Config's stage set runs the whole pass of the variant in use (mha_forward.cpp defines
// them on builds of one variant).
template <unsigned Stages>
Status mha_forward_staged(const MhaDims& d, const MhaWeights& w, const MhaPacked& packed,
                          const MhaPositions& positions, ArenaRef& arena, const AttentionShape& shape,
                          Span<const float> query, Span<const float> key, Span<const float> value,
                          Span<float> out, const ForwardOptions& options, const KvCacheView* cache) noexcept {
  return kernels().mha_forward(d, w, packed, positions, arena, shape, query, key, value, out, options, cache);
}
EMHA_FOR_EACH_STAGE_SET(EMHA_INSTANTIATE_STAGED)
#endif

}  // namespace emha::detail

#if !EMHA_X86_DISPATCH
namespace emha {
// One variant: selecting it is a no-op, any other name is refused.
Status select_simd_isa(const char* isa) noexcept {
  return isa && std::strcmp(isa, detail::kernels().isa) == 0 ? Status::ok : Status::invalid_argument;
}
}  // namespace emha
#endif

// SPDX-License-Identifier: Apache-2.0
// The full-integer layer's forward() with double rounding in each variant (kernel_list.def's
// mha_s8_forward_core): the VNNI pass (mha_s8_vnni.hpp) where the variant has AVX-512 VNNI and
// head_dim is a multiple of 4, the general pass (mha_s8_forward.cpp, compiled once) otherwise.
// Both give the reference's bytes.

#include "attention/mha_s8_general.hpp"
#include "attention/mha_s8_vnni.hpp"
#include "isa_kernels.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

Status mha_s8_forward_core(const MhaDims& d, const MhaS8Weights& w, const SoftmaxS8Table& table, ArenaRef& arena,
                           const AttentionShape& sh, Span<const std::int8_t> query, Span<const std::int8_t> key,
                           Span<const std::int8_t> value, Span<std::int8_t> out, const ForwardOptionsS8& o) noexcept {
  if (!vnni::available || d.d_k() % 4 != 0)
    return mha_s8_general<Rounding::double_rounding, false>(d, w, table, arena, sh, query, key, value, out, o);
  return mha_s8_run(d, w, arena, sh, query, key, value, out, o, [&](const MhaS8Buffers& buf, std::size_t b) {
    vnni::sequence(d, w, table, sh, query, key, value, out, o, buf, b);
  });
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

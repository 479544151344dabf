// SPDX-License-Identifier: Apache-2.0
// The full-integer layer's forward() with double rounding in each variant (kernel_list.def's
// mha_s8_forward_core): the VNNI pass (mha_s8_vnni.hpp) where the variant has AVX-512 VNNI and
// head_dim is a multiple of 4, the general pass (mha_s8_forward.cpp, compiled once) otherwise.
// Both give the reference's bytes.

#include "attention/mha_s8_general.hpp"
#include "attention/mha_s8_validate.hpp"
#include "attention/mha_s8_vnni.hpp"
#include "attention/return_on_error.hpp"
#include "isa_kernels.hpp"

namespace emha::detail {
inline namespace EMHA_ISA {

Status mha_s8_forward_core(const MhaDims& d, const MhaS8Weights& w, const SoftmaxS8Table& table, ArenaRef& arena,
                           const AttentionShape& sh, Span<const std::int8_t> query, Span<const std::int8_t> key,
                           Span<const std::int8_t> value, Span<std::int8_t> out, const ForwardOptionsS8& o) noexcept {
  if (!vnni::available || d.d_k() % 4 != 0)
    return mha_s8_general<Rounding::double_rounding, false>(d, w, table, arena, sh, query, key, value, out, o);
  EMHA_TRY(mha_s8_check_call(d, w, arena, sh, query, key, value, out, o));
  ArenaScope scope(arena);
  MhaS8Buffers buf{};
  EMHA_TRY(mha_s8_allocate(d, arena, buf));
  for (std::size_t b = 0; b < sh.batch; ++b) vnni::sequence(d, w, table, sh, query, key, value, out, o, buf, b);
  return Status::ok;
}

}  // namespace EMHA_ISA
}  // namespace emha::detail

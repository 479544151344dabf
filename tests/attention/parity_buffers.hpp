// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the layer suites (test_parity.cpp, test_seed_models.cpp, test_kv_cache.cpp; host and
// firmware) share: static buffers sized at compile time for the largest of their fixtures, and
// guard floats around the outputs.

#include <cstddef>
#include <tuple>
#include <type_traits>

namespace emha::test {

// The largest of Size<F>::value over the fixtures of a std::tuple (at least 1: no zero-length
// arrays).
template <template <class> class Size, class... F>
constexpr std::size_t max_over(std::tuple<F...>*) {
  std::size_t m = 1;
  ((m = Size<F>::value > m ? Size<F>::value : m), ...);
  return m;
}
template <template <class> class Size, class Fixtures>
constexpr std::size_t largest_of = max_over<Size>(static_cast<Fixtures*>(nullptr));

// Arena and object bytes of a fixture's layer M<F, Prepack>, the larger of both weight modes.
template <template <class, bool> class M, class F>
struct ArenaBytesOf
    : std::integral_constant<std::size_t, (M<F, true>::arena_bytes > M<F, false>::arena_bytes ? M<F, true>::arena_bytes
                                                                                              : M<F, false>::arena_bytes)> {};
template <template <class, bool> class M, class F>
struct ObjectBytesOf
    : std::integral_constant<std::size_t, (sizeof(M<F, true>) > sizeof(M<F, false>) ? sizeof(M<F, true>)
                                                                                      : sizeof(M<F, false>))> {};

// Floats of a fixture's output [batch, seq_q, d_model] and attention weights ([batch, seq_q,
// seq_kv], per head unless averaged).
template <class F>
struct OutFloats : std::integral_constant<std::size_t, F::batch * F::seq_q * F::d_model> {};
template <class F>
struct WeightFloats
    : std::integral_constant<std::size_t, F::batch * F::seq_q * F::seq_kv * (F::average_attn_weights ? 1 : F::heads)> {};

// An output buffer of n floats sits at buf + guard, with `guard` sentinels on each side.
inline constexpr std::size_t guard = 16;
inline constexpr float sentinel = -12345.0f;

inline void fill_guarded(float* buf, std::size_t n) {
  for (std::size_t i = 0; i < n + 2 * guard; ++i) buf[i] = sentinel;
}
inline bool guards_intact(const float* buf, std::size_t n) {
  for (std::size_t i = 0; i < guard; ++i)
    if (buf[i] != sentinel || buf[guard + n + i] != sentinel) return false;
  return true;
}

}  // namespace emha::test

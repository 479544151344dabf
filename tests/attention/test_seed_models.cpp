// SPDX-License-Identifier: Apache-2.0
// The seed modules end to end: the blog encoder block (sinusoidal input, post-LN; as written, with
// its flat head split as HeadSplit::flat_view and its scale as Config::scale, and with the
// conventional split), torchscale's MultiheadAttention (xPos, sub-LN, rel_pos), labml's annotated
// MHA (its mask, V-only bias), per-head Linear layouts, and RoPE / ALiBi / RMSNorm / pre-LN, each
// against a faithful PyTorch re-implementation (tests/attention/gen_seed_fixtures.py, committed
// fixtures, mapped to the API by seed_support.hpp), on the host (every fixture) and the firmware
// (emha::seed_fixtures::small). Every path: fused (no attention weights), unfused (attention
// weights out) and the scalar reference, each with the weights pre-packed into the object and
// read in place. The blog encoder's fixtures get emha's sinusoidal table added to the query first
// (F::add_sinusoidal); self-attention passes the query span three times.
//   Asserted: |emha - torch| within the float32 error budget of two implementations
//   (seed_tolerance), as test_parity.cpp does for nn.MultiheadAttention; the attention weights
//   written only when asked for, within their guards.
//   Printed per fixture and path: the parity criterion, emha's max error against the float64
//   truth over PyTorch float32's own. Not asserted: near 1 it is a one-ULP question on the
//   largest outputs, which moves with any change of rounding order (bench/README.md).
// Buffers: all static, one caller arena and one object slot (seed_buffers.hpp, shared with
// test_kv_cache.cpp) and the guarded outputs, sized at compile time for the largest fixture;
// forward() runs through the stack probe (support/stack_use.hpp), measured on the firmware.

#include <cstddef>
#include <new>
#include <tuple>
#include <type_traits>

#include "attention/parity_buffers.hpp"
#include "attention/seed_buffers.hpp"
#include "attention/seed_support.hpp"
#include "emha/kernels/sinusoidal.hpp"
#include "seed_fixtures/all.hpp"
#include "support/parity_errors.hpp"
#include "support/stack_use.hpp"
#include "support/unit.hpp"

namespace {

using namespace emha::test;

using Fixtures = seed_fixture_list;

template <class F, bool Prepack>
using Mha = SeedMha<F, Prepack>;

template <class F>
constexpr std::size_t in_floats = F::batch * F::seq_q * F::d_model;

template <template <class> class Size>
constexpr std::size_t largest = largest_of<Size, Fixtures>;

// Only the fixtures that add the sinusoidal encoding need a RAM copy of their query.
template <class F>
struct QueryFloats : std::integral_constant<std::size_t, F::add_sinusoidal ? in_floats<F> : 0> {};
template <class F>
struct TableFloats : std::integral_constant<std::size_t, F::add_sinusoidal ? F::seq_q * F::d_model : 0> {};

float g_out[largest<OutFloats> + 2 * guard];
float g_weights[largest<WeightFloats> + 2 * guard];
float g_query[largest<QueryFloats>];  // emb + pe (the blog encoder block's input)
float g_table[largest<TableFloats>];  // sinusoidal_table_f32 [seq_q x d_model]
std::size_t g_forward_stack = 0;      // the most stack any forward() here took, painted and measured

// The fixture's query: in place, or with the blog's sinusoidal encoding added by emha's own table
// when the module does so (x = emb + pe, before the block). Empty on failure.
template <class F>
emha::Span<const float> seed_query() {
  constexpr std::size_t n = in_floats<F>;
  if constexpr (!F::add_sinusoidal) {
    return {F::query, n};
  } else {
    static_assert(n <= sizeof(g_query) / sizeof(float) && F::seq_q * F::d_model <= sizeof(g_table) / sizeof(float),
                  "query buffers too small");
    if (emha::sinusoidal_table_f32(F::seq_q, F::d_model, g_table) != emha::Status::ok) return {};
    for (std::size_t i = 0; i < n; ++i) g_query[i] = F::query[i];
    add_positions<F>(g_query, g_table);
    return {g_query, n};
  }
}

enum class Path { fused, unfused, reference };
constexpr const char* path_names[] = {"fused", "unfused", "reference"};

// (Named as test_parity.cpp's: stack_budget.py's --probe, run_(parity|decode)<.*_FUN, finds the
// trampolines of this file, test_parity.cpp's and test_kv_cache.cpp's.)
template <class F, bool Prepack>
void run_parity(Path path) {
  using M = Mha<F, Prepack>;
  static_assert(sizeof(M) <= sizeof(g_seed_object) && alignof(M) <= 64, "object slot too small");
  static_assert(M::arena_bytes <= sizeof(g_seed_arena), "arena too small");
  M& mha = *new (g_seed_object) M(g_seed_arena);  // placement: no heap
  const bool unfused = path == Path::unfused;

  emha::ForwardOptions opt = seed_options<F>();
  constexpr std::size_t out_n = OutFloats<F>::value, w_n = WeightFloats<F>::value;
  fill_guarded(g_out, out_n);
  fill_guarded(g_weights, w_n);
  if (unfused) opt.attn_weights = {g_weights + guard, w_n};

  const emha::Span<const float> q = seed_query<F>();
  const auto k = F::self_attention ? q : span_of(F::key);
  const auto v = F::self_attention ? q : span_of(F::value);
  const emha::Span<float> out{g_out + guard, out_n};
  emha::Status status = q.data ? mha.set_weights(seed_weights<F>()) : emha::Status::invalid_argument;
  // forward() through a trampoline whose stack is measured.
  struct Call {
    M& mha;
    const emha::Span<const float> q, k, v;
    const emha::Span<float> out;
    const emha::ForwardOptions& opt;
    emha::Status status;
  } call{mha, q, k, v, out, opt, status};
  if (status == emha::Status::ok && path == Path::reference) {
    status = mha.forward_reference(fixture_shape<F>(), q, k, v, out, opt);
  } else if (status == emha::Status::ok) {
    const std::size_t used = stack_bytes_used(
        [](void* p) {
          Call& c = *static_cast<Call*>(p);
          c.status = c.mha.forward(fixture_shape<F>(), c.q, c.k, c.v, c.out, c.opt);
        },
        &call);
    status = call.status;
    if (used > g_forward_stack) g_forward_stack = used;
  }

  const double tol = seed_tolerance<F>();
  const double out_err = max_scaled_error(g_out + guard, F::out, out_n);
  const auto e = parity_errors<F>(g_out + guard, out_n);
  EMHA_INFO(F::name << " (" << F::module << "), " << path_names[int(path)]
                    << (Prepack ? ", pre-packed" : ", weights in place") << ": max |emha - f64| " << e.mine
                    << ", max |torch f32 - f64| " << e.theirs << ", max |emha - torch| " << e.vs_torch);
  EMHA_INFO("max |emha - torch| / (1 + |torch|) = " << out_err << ", tolerance " << tol);
  EMHA_CHECK(status == emha::Status::ok);
  EMHA_CHECK(out_err <= tol);
  EMHA_CHECK(guards_intact(g_out, out_n));
  // Unfused: written (the first entry no longer the sentinel) and within their guards; otherwise
  // not requested, so not written. Compared with torch where the fixture has them.
  const bool w_written = g_weights[guard] != sentinel;
  EMHA_CHECK(w_written == unfused);
  EMHA_CHECK(guards_intact(g_weights, w_n));
  if constexpr (F::need_weights) {
    if (unfused) {
      const double w_err = max_scaled_error(g_weights + guard, F::attn_weights, w_n);
      EMHA_INFO("attention weights: max |emha - torch| / (1 + |torch|) = " << w_err);
      EMHA_CHECK(w_err <= seed_weights_tolerance<F>());
    }
  }
  EMHA_CHECK(mha.arena().high_water() <= M::arena_bytes);
  if (Prepack && status == emha::Status::ok)
    EMHA_MESSAGE("parity vs float64, " << path_names[int(path)] << " " << F::name << ": emha max " << e.mine
                                       << ", torch float32 max " << e.theirs << ", ratio " << e.mine / e.theirs
                                       << (e.mine <= 2.0 * e.theirs ? " (within 2x)" : " (OVER 2x)"));
  mha.~M();
}

template <class F>
void run_fixture() {
  static_assert(SeedConfig<F>::attention_weights, "the unfused path needs a Config that allows attention weights");
  for (Path p : {Path::fused, Path::unfused, Path::reference}) {
    run_parity<F, true>(p);
    run_parity<F, false>(p);  // weights read in place
  }
}

template <class... F>
void run_all(std::tuple<F...>*) {
  (run_fixture<F>(), ...);
}

}  // namespace

EMHA_TEST_CASE("seed modules match their PyTorch re-implementations") {
  run_all(static_cast<Fixtures*>(nullptr));
  EMHA_MESSAGE(static_cast<unsigned>(std::tuple_size_v<Fixtures>)
               << " seed fixtures; arena " << static_cast<unsigned>(sizeof(g_seed_arena)) << " bytes, object slot "
               << static_cast<unsigned>(sizeof(g_seed_object)) << " bytes");
  report_forward_stack(g_forward_stack, "seed modules");
}

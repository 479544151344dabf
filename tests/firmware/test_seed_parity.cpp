// SPDX-License-Identifier: Apache-2.0
// MultiHeadAttention around attention (issue #16) against the seed modules' PyTorch
// re-implementations, on the target: every fixture of emha::seed_fixtures::small
// (tests/attention/seed_fixtures, mapped to the API by seed_support.hpp; the host suite's
// tests/attention/test_seed_models.cpp does the same with doctest). Both paths, fused (no
// attention weights) and unfused (attention weights out, when the Config allows them), each with
// the weights pre-packed into the object and read in place from flash. The blog encoder's
// fixtures get emha's sinusoidal table added to the query first (F::add_sinusoidal);
// self-attention passes the query span three times. Buffers as test_parity.cpp: all static, one
// arena, one object slot (both shared with test_kv_cache.cpp: seed_buffers.hpp) and the guarded
// outputs, sized at compile time for the largest fixture.

#include <cstddef>
#include <new>
#include <tuple>
#include <type_traits>

#include "attention/seed_support.hpp"
#include "emha/kernels/sinusoidal.hpp"
#include "parity_buffers.hpp"
#include "runner.hpp"
#include "seed_buffers.hpp"
#include "seed_fixtures/all.hpp"
#include "stack_probe.hpp"
#include "support/parity_errors.hpp"

namespace fw {
namespace {

using Fixtures = emha::seed_fixtures::small;

template <class F, bool Prepack>
using Mha = SeedMha<F, Prepack>;

template <class F>
constexpr std::size_t in_floats = F::batch * F::seq_q * F::d_model;
template <class F>
constexpr std::size_t out_floats = F::batch * F::seq_q * F::d_model;
template <class F>
constexpr std::size_t weight_floats = F::batch * F::seq_q * F::seq_kv * (F::average_attn_weights ? 1 : F::heads);

template <template <class> class Size>
constexpr std::size_t largest = largest_of<Size, Fixtures>;

template <class F>
struct OutFloats : std::integral_constant<std::size_t, out_floats<F>> {};
template <class F>
struct WeightFloats : std::integral_constant<std::size_t, weight_floats<F>> {};
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

// The fixture's query: in place from flash, or with the blog's sinusoidal encoding added by
// emha's own table when the module does so (x = emb + pe, before the block). Empty on failure.
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
    emha::test::add_positions<F>(g_query, g_table);
    return {g_query, n};
  }
}

// (Named as test_parity.cpp's: stack_budget.py's --probe, run_(parity|decode)<.*_FUN, finds the
// trampolines of both files and test_kv_cache.cpp's, so that the measurement printed below is
// checked against them.)
template <class F, bool Prepack>
void run_parity(bool unfused) {
  using M = Mha<F, Prepack>;
  static_assert(sizeof(M) <= sizeof(g_seed_object) && alignof(M) <= 64, "object slot too small");
  static_assert(M::arena_bytes <= sizeof(g_seed_arena), "arena too small");
  M& mha = *new (g_seed_object) M(g_seed_arena);  // placement: no heap
  const char* variant = unfused ? (Prepack ? "unfused, pre-packed" : "unfused, weights in place")
                                : (Prepack ? "fused, pre-packed" : "fused, weights in place");

  emha::ForwardOptions opt = emha::test::seed_options<F>();
  constexpr std::size_t out_n = out_floats<F>, w_n = weight_floats<F>;
  fill_guarded(g_out, out_n);
  fill_guarded(g_weights, w_n);
  if (unfused) opt.attn_weights = {g_weights + guard, w_n};

  const emha::Span<const float> q = seed_query<F>();
  const auto k = F::self_attention ? q : emha::test::span_of(F::key);
  const auto v = F::self_attention ? q : emha::test::span_of(F::value);
  const emha::Span<float> out{g_out + guard, out_n};
  emha::Status status = q.data ? mha.set_weights(emha::test::seed_weights<F>()) : emha::Status::invalid_argument;
  // forward() through a trampoline whose stack is measured (stack_probe.hpp).
  struct Call {
    M& mha;
    const emha::Span<const float> q, k, v;
    const emha::Span<float> out;
    const emha::ForwardOptions& opt;
    emha::Status status;
  } call{mha, q, k, v, out, opt, status};
  if (status == emha::Status::ok) {
    const std::size_t used = stack_bytes_used(
        [](void* p) {
          Call& c = *static_cast<Call*>(p);
          c.status = c.mha.forward(emha::test::fixture_shape<F>(), c.q, c.k, c.v, c.out, c.opt);
        },
        &call);
    status = call.status;
    if (used > g_forward_stack) g_forward_stack = used;
  }

  const double tol = emha::test::seed_tolerance<F>();
  const double out_err = emha::test::max_scaled_error(g_out + guard, F::out, out_n);
  double w_err = 0, w_tol = 0;
  // Unfused: written (the first entry no longer the sentinel) and within their guards; fused:
  // not requested, so not written. Compared with torch where the fixture has them.
  const bool w_written = g_weights[guard] != sentinel, w_guards = guards_intact(g_weights, w_n);
  bool weights_ok = unfused ? w_written && w_guards : !w_written;
  if constexpr (F::need_weights) {
    if (unfused) {
      w_err = emha::test::max_scaled_error(g_weights + guard, F::attn_weights, w_n);
      w_tol = emha::test::seed_weights_tolerance<F>();
      weights_ok = weights_ok && w_err <= w_tol;
    }
  }
  const bool ok = status == emha::Status::ok && out_err <= tol && guards_intact(g_out, out_n) && weights_ok &&
                  mha.arena().high_water() <= M::arena_bytes;
  if (!check(ok, "seed module matches its PyTorch re-implementation")) {  // two lines: a Line holds 200 characters
    Line() << "  " << F::name << " (" << variant << "): status " << int(status) << ", max |emha-torch|/(1+|torch|) "
           << out_err << ", tolerance " << tol << ", out guards " << (guards_intact(g_out, out_n) ? "intact" : "HIT")
           << ", arena high water " << static_cast<unsigned>(mha.arena().high_water()) << " of "
           << static_cast<unsigned>(M::arena_bytes);
    Line() << "    attention weights " << (w_written ? "written" : "not written") << ", guards "
           << (w_guards ? "intact" : "HIT") << ", max |emha-torch|/(1+|torch|) " << w_err << ", tolerance " << w_tol
           << (F::need_weights ? "" : " (no torch weights in this fixture)");
  }
  // Issue #16's criterion, printed as the host suite prints it (test_seed_models.cpp; not
  // asserted there either): emha's max error against the float64 truth over torch float32's.
  if (ok && Prepack) {
    const auto e = emha::test::parity_errors<F>(g_out + guard, out_n);
    Line() << "  parity vs float64, " << (unfused ? "unfused " : "fused ") << F::name << ": ratio "
           << e.mine / e.theirs << (e.mine <= 2.0 * e.theirs ? " (within 2x)" : " (OVER 2x)");
  }
  mha.~M();
}

template <class F>
void run_fixture() {
  run_parity<F, true>(false);
  run_parity<F, false>(false);
  if constexpr (emha::test::SeedConfig<F>::attention_weights) {
    run_parity<F, true>(true);
    run_parity<F, false>(true);
  }
}

template <class... F>
void run_all(std::tuple<F...>*) {
  (run_fixture<F>(), ...);
}

}  // namespace

void test_seed_parity() {
  Suite suite("seed parity");
  run_all(static_cast<Fixtures*>(nullptr));
  Line() << "  " << std::tuple_size_v<Fixtures> << " seed fixtures; arena "
         << static_cast<unsigned>(sizeof(g_seed_arena)) << " bytes, object slot "
         << static_cast<unsigned>(sizeof(g_seed_object)) << " bytes";
  // In the words of test_parity.cpp's line: stack_budget.py takes the largest of these lines
  // and checks it against its bound for the probe trampolines.
  Line() << "  stack: forward used at most " << static_cast<unsigned>(g_forward_stack)
         << " bytes (measured, seed modules)";
  check(g_forward_stack > 0, "the stack probe saw forward() run");
}

}  // namespace fw

// SPDX-License-Identifier: Apache-2.0
// MultiHeadAttention against torch.nn.MultiheadAttention on the target: every fixture of
// emha::fixtures::small (tests/attention/fixtures, mapped to the API by fixture_support.hpp, the
// host suite's tests/attention/test_parity.cpp does the same with doctest), with the weights read
// in place from flash and pre-packed into the object, and key padding as valid lengths. All
// buffers are static: one arena, one object slot and the guarded outputs, sized at compile time
// for the largest fixture.

#include <cmath>
#include <cstddef>
#include <new>
#include <tuple>
#include <type_traits>

#include "attention/fixture_support.hpp"
#include "fixtures/all.hpp"
#include "parity_buffers.hpp"
#include "runner.hpp"
#include "stack_probe.hpp"

namespace fw {
namespace {

using Fixtures = emha::fixtures::small;

template <class F, bool Prepack>
using Mha = emha::MultiHeadAttention<emha::test::FixtureConfig<F, Prepack>, emha::ArenaOwnership::caller>;

template <class F>
constexpr std::size_t out_floats = F::batch * F::seq_q * F::d_model;
template <class F>
constexpr std::size_t weight_floats = F::batch * F::seq_q * F::seq_kv * (F::average_attn_weights ? 1 : F::heads);

template <template <class> class Size>
constexpr std::size_t largest = largest_of<Size, Fixtures>;

template <class F>
using ArenaBytes = ArenaBytesOf<Mha, F>;
template <class F>
using ObjectBytes = ObjectBytesOf<Mha, F>;
template <class F>
struct OutFloats : std::integral_constant<std::size_t, out_floats<F>> {};
template <class F>
struct WeightFloats : std::integral_constant<std::size_t, weight_floats<F>> {};
template <class F>
struct Batch : std::integral_constant<std::size_t, F::batch> {};

emha::StaticArena<largest<ArenaBytes>> g_arena;
alignas(64) unsigned char g_object[largest<ObjectBytes>];
float g_out[largest<OutFloats> + 2 * guard];
float g_weights[largest<WeightFloats> + 2 * guard];
std::size_t g_lengths[largest<Batch>];
std::size_t g_forward_stack = 0;  // the most stack any forward() took, painted and measured

template <class F, bool Prepack>
void run_parity(bool use_lengths) {
  using M = Mha<F, Prepack>;
  static_assert(sizeof(M) <= sizeof(g_object) && alignof(M) <= 64, "object slot too small");
  M& mha = *new (g_object) M(g_arena);  // placement: no heap
  const char* variant = use_lengths ? "key lengths" : Prepack ? "pre-packed" : "weights in place";

  emha::ForwardOptions opt;
  opt.masks = emha::test::fixture_masks<F>();
  if (use_lengths) {
    opt.masks.key_ignored = {};
    opt.masks.key_lengths = {g_lengths, F::batch};
  }
  constexpr std::size_t out_n = out_floats<F>, w_n = weight_floats<F>;
  fill_guarded(g_out, out_n);
  fill_guarded(g_weights, w_n);
  if (F::need_weights) opt.attn_weights = {g_weights + guard, w_n};
  opt.average_attn_weights = F::average_attn_weights;

  const auto q = emha::test::span_of(F::query);
  const auto k = emha::test::span_of(F::key);
  const auto v = emha::test::span_of(F::value);
  const emha::Span<float> out{g_out + guard, out_n};
  emha::Status status = mha.set_weights(emha::test::fixture_weights<F>());
  // forward() through a trampoline whose stack is measured (stack_probe.hpp).
  struct Call {
    M& mha;
    const emha::Span<const float> q, k, v;
    const emha::Span<float> out;
    const emha::ForwardOptions& opt;
    emha::Status status;
  } call{mha, q, F::self_attention ? q : k, F::self_attention ? q : v, out, opt, status};
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

  const double tol = emha::test::fixture_tolerance<F>();
  const double out_err = emha::test::max_scaled_error(g_out + guard, F::out, out_n);
  double w_err = 0;
  if constexpr (F::need_weights) w_err = emha::test::max_scaled_error(g_weights + guard, F::attn_weights, w_n);
  const bool weights_ok = F::need_weights ? w_err <= tol && guards_intact(g_weights, w_n)
                                          : g_weights[guard] == sentinel;  // not requested: not written
  const bool ok = status == emha::Status::ok && out_err <= tol && guards_intact(g_out, out_n) &&
                  weights_ok && mha.arena().high_water() <= M::arena_bytes;
  if (!check(ok, "MultiHeadAttention matches torch.nn.MultiheadAttention"))
    Line() << "  " << F::name << " (" << variant << "): status " << int(status) << ", max |emha - torch| / (1 + |torch|) "
           << out_err << ", weights " << w_err << ", tolerance " << tol << ", arena high water "
           << static_cast<unsigned>(mha.arena().high_water()) << " of " << static_cast<unsigned>(M::arena_bytes);
  mha.~M();
}

template <class... F>
void run_all(std::tuple<F...>*) {
  ((run_parity<F, false>(false), run_parity<F, true>(false), emha::test::prefix_lengths<F>(g_lengths) ? run_parity<F, false>(true) : void()),
   ...);
}

}  // namespace

void test_parity() {
  Suite suite("parity");
  run_all(static_cast<Fixtures*>(nullptr));
  Line() << "  " << std::tuple_size_v<Fixtures> << " fixtures; arena " << static_cast<unsigned>(sizeof(g_arena))
         << " bytes, object slot " << static_cast<unsigned>(sizeof(g_object)) << " bytes";
  // The measured high-water of every forward above, its trampoline included: stack_budget.py
  // reads this line and checks it against its own bound for the same call.
  Line() << "  stack: forward used at most " << static_cast<unsigned>(g_forward_stack) << " bytes (measured)";
  check(g_forward_stack > 0, "the stack probe saw forward() run");
}

}  // namespace fw

// SPDX-License-Identifier: Apache-2.0
// The model-family features of the layer against PyTorch references written from the Hugging Face
// modules' math (tests/attention/gen_feature_fixtures.py, read by feature_support.hpp): head_dim
// independent of d_model / heads (wider and narrower, GQA, with and without biases), QK-norm
// (Qwen3's per-head x_hat * w, Gemma 3's per-head x_hat * (1 + w), OLMo-2's over the whole
// projection; each before RoPE), a compile-time Config::scale (T5's 1, Gemma's
// query_pre_attn_scalar**-0.5) and T5's relative position bias (encoder and decoder), on the host
// (every fixture) and the firmware (emha::feature_fixtures::small).
//   - relative_bucket against HF's _relative_position_bucket run by torch, over the fixtures'
//     settings and T5's 32 / 128 both ways for relative positions -600 .. 600;
//   - every path: fused (no attention weights), unfused (per-head attention weights out, compared
//     with torch's) and the scalar reference, weights pre-packed and read in place;
//   - decoding the causal fixtures through a KvCache (a 3-token prefill, then one token per step:
//     with kv_heads < heads the GQA decode step), batch F::batch and batch 1, against torch's one
//     causal forward: the cache holds normalized, rotated keys, T5's bias at absolute positions.
//   Asserted: |emha - torch| within the float32 error budget of two implementations
//   (feature_tolerance). Printed: emha's max error against the float64 truth over torch
//   float32's own (the parity criterion; not asserted, a one-ULP question near 1).
// Buffers: all static; on the firmware the seed suites' (seed_buffers.hpp: object slot, caller
// arena, guarded outputs; the attention-weight buffer also holds the KvCache while decoding),
// checked at compile time; forward() runs through the stack probe (support/stack_use.hpp).
// Threads, the run-time scale override and bad weights are test_layer_features_host.cpp's.

#include <cstddef>
#include <new>
#include <tuple>
#include <type_traits>

#include "attention/feature_support.hpp"
#include "attention/parity_buffers.hpp"
#include "attention/seed_buffers.hpp"
#include "emha/kernels/relative_bias.hpp"
#include "support/parity_errors.hpp"
#include "support/stack_use.hpp"
#include "support/unit.hpp"

namespace {

using namespace emha::test;

using Fixtures = feature_fixture_list;

template <class F, bool Prepack>
using Mha = emha::MultiHeadAttention<FeatureConfig<F, Prepack>, emha::ArenaOwnership::caller>;
// Room for all T tokens of every sequence.
template <class F, bool Prepack>
using Cache = emha::KvCache<FeatureConfig<F, Prepack>, F::seq_kv, F::batch, emha::ArenaOwnership::caller>;

constexpr std::size_t prefill = 3;  // tokens of a decode's first step; then one per step

template <class F>
struct StepFloats : std::integral_constant<std::size_t, F::batch * prefill * F::d_model> {};
template <class F>
struct CacheFloats : std::integral_constant<std::size_t, F::causal ? Cache<F, true>::floats : 0> {};
// The attention-weight buffer holds a decode's cache too.
template <class F>
struct AttnFloats : std::integral_constant<std::size_t, (WeightFloats<F>::value + 2 * guard > CacheFloats<F>::value
                                                             ? WeightFloats<F>::value + 2 * guard
                                                             : CacheFloats<F>::value)> {};
template <class F>
using ArenaBytes = ArenaBytesOf<Mha, F>;
template <class F>
using ObjectBytes = ObjectBytesOf<Mha, F>;
template <template <class> class Size>
constexpr std::size_t largest = largest_of<Size, Fixtures>;

// Where the layers, outputs and caches live: on the firmware, whose RAM is nearly full, in the
// seed suites' slots (seed_buffers.hpp; the suites run one after the other), checked to fit at
// compile time; on the host in slots of their own, sized for every fixture here (T5's 20
// positions take more than the seed fixtures do).
template <bool First, class A, class B>
constexpr std::conditional_t<First, A, B>& pick(A& a, B& b) noexcept {
  if constexpr (First) {
    return a;
  } else {
    return b;
  }
}
emha::StaticArena<on_firmware ? 64 : largest<ArenaBytes>> g_own_arena;
alignas(64) unsigned char g_own_object[on_firmware ? 1 : largest<ObjectBytes>];
alignas(64) float g_own_out[on_firmware ? 1 : largest<OutFloats> + 2 * guard];
alignas(64) float g_own_attn[on_firmware ? 1 : largest<AttnFloats>];
auto& g_arena = pick<on_firmware>(g_seed_arena, g_own_arena);
auto& g_object = pick<on_firmware>(g_seed_object, g_own_object);
auto& g_out = pick<on_firmware>(g_seed_out, g_own_out);     // guarded outputs [B, S, D]
auto& g_attn = pick<on_firmware>(g_seed_attn, g_own_attn);  // guarded attention weights, or a cache

float g_x[largest<StepFloats>];              // a step's new tokens [B, n, D]
float g_y[largest<StepFloats> + 2 * guard];  // a step's outputs [B, n, D], guarded
std::size_t g_forward_stack = 0;             // the most stack any forward() here took

template <class F, bool Prepack>
void fits_the_buffers() {
  using M = Mha<F, Prepack>;
  static_assert(sizeof(M) <= sizeof(g_object) && alignof(M) <= 64, "object slot too small");
  static_assert(M::arena_bytes <= sizeof(g_arena), "arena too small");
  static_assert(OutFloats<F>::value + 2 * guard <= sizeof(g_out) / sizeof(float), "output buffer too small");
  static_assert(AttnFloats<F>::value <= sizeof(g_attn) / sizeof(float), "attention weights buffer too small");
}

// --- relative_bucket -------------------------------------------------------------------------

template <class T>
void check_buckets() {
  constexpr std::size_t n = sizeof(T::bucket);
  std::size_t wrong = 0;
  long first_wrong = 0;
  std::size_t got_there = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::ptrdiff_t rel = static_cast<std::ptrdiff_t>(T::first + long(i));
    const std::size_t got = emha::relative_bucket(rel, T::buckets, T::max_distance, T::bidirectional);
    if (got != T::bucket[i] && wrong++ == 0) {
      first_wrong = long(rel);
      got_there = got;
    }
  }
  EMHA_INFO("buckets " << static_cast<unsigned>(T::buckets) << ", max_distance " << static_cast<unsigned>(T::max_distance)
                       << (T::bidirectional ? ", bidirectional" : ", causal") << ": " << static_cast<unsigned>(wrong)
                       << " positions differ from torch's, the first " << first_wrong << " (emha "
                       << static_cast<unsigned>(got_there) << ")");
  EMHA_CHECK(wrong == 0);
}

template <class... T>
void check_all_buckets(std::tuple<T...>*) {
  (check_buckets<T>(), ...);
}

// --- forward: fused, unfused, reference --------------------------------------------------------

enum class Path { fused, unfused, reference };
constexpr const char* path_names[] = {"fused", "unfused", "reference"};

// (Named as test_parity.cpp's: stack_budget.py's --probe, run_(parity|decode)<.*_FUN, finds the
// trampolines.)
template <class F, bool Prepack>
void run_parity(Path path) {
  using M = Mha<F, Prepack>;
  fits_the_buffers<F, Prepack>();
  M& mha = *new (g_object) M(g_arena);  // placement: no heap
  const bool unfused = path == Path::unfused;
  emha::ForwardOptions opt = feature_options<F>();
  constexpr std::size_t out_n = OutFloats<F>::value, w_n = WeightFloats<F>::value;
  fill_guarded(g_out, out_n);
  fill_guarded(g_attn, w_n);
  if (unfused) opt.attn_weights = {g_attn + guard, w_n};
  const auto q = span_of(F::query);
  const emha::Span<float> out{g_out + guard, out_n};
  emha::Status status = mha.set_weights(feature_weights<F>());
  struct Call {
    M& mha;
    const emha::Span<const float> q;
    const emha::Span<float> out;
    const emha::ForwardOptions& opt;
    emha::Status status;
  } call{mha, q, out, opt, status};
  if (status == emha::Status::ok && path == Path::reference) {
    status = mha.forward_reference(fixture_shape<F>(), q, q, q, out, opt);
  } else if (status == emha::Status::ok) {
    const std::size_t used = stack_bytes_used(
        [](void* p) {
          Call& c = *static_cast<Call*>(p);
          c.status = c.mha.forward(fixture_shape<F>(), c.q, c.q, c.q, c.out, c.opt);
        },
        &call);
    status = call.status;
    if (used > g_forward_stack) g_forward_stack = used;
  }

  const double tol = feature_tolerance<F>();
  const double out_err = max_scaled_error(g_out + guard, F::out, out_n);
  const auto e = parity_errors<F>(g_out + guard, out_n);
  EMHA_INFO(F::name << " (" << F::module << "), " << path_names[int(path)]
                    << (Prepack ? ", pre-packed" : ", weights in place") << ": status " << int(status)
                    << ", max |emha - f64| " << e.mine << ", max |torch f32 - f64| " << e.theirs);
  EMHA_INFO("max |emha - torch| / (1 + |torch|) = " << out_err << ", tolerance " << tol);
  EMHA_CHECK(status == emha::Status::ok);
  EMHA_CHECK(out_err <= tol);
  EMHA_CHECK(guards_intact(g_out, out_n));
  EMHA_CHECK((g_attn[guard] != sentinel) == unfused);  // written only when asked for
  EMHA_CHECK(guards_intact(g_attn, w_n));
  if (unfused) {
    const double w_err = max_scaled_error(g_attn + guard, F::attn_weights, w_n);
    EMHA_INFO("attention weights: max |emha - torch| / (1 + |torch|) = " << w_err << ", tolerance "
                                                                           << feature_weights_tolerance<F>());
    EMHA_CHECK(w_err <= feature_weights_tolerance<F>());
  }
  EMHA_CHECK(mha.arena().high_water() <= M::arena_bytes);
  if (Prepack && status == emha::Status::ok)
    EMHA_MESSAGE("parity vs float64, " << path_names[int(path)] << " " << F::name << ": emha max " << e.mine
                                       << ", torch float32 max " << e.theirs << ", ratio " << e.mine / e.theirs
                                       << (e.mine <= 2.0 * e.theirs ? " (within 2x)" : " (OVER 2x)"));
  mha.~M();
}

// --- decoding through a KvCache ------------------------------------------------------------------

// Decodes the first `batch` sequences of a causal fixture: a `prefill`-token first step, then one
// token per step, every sequence together; step outputs gathered into g_out [batch, T, D]
// (the fixture's rows of those sequences), compared with torch's one causal forward.
template <class F, bool Prepack>
void run_decode(std::size_t batch) {
  using M = Mha<F, Prepack>;
  using C = Cache<F, Prepack>;
  fits_the_buffers<F, Prepack>();
  static_assert(StepFloats<F>::value <= sizeof(g_x) / sizeof(float), "step buffers too small");
  constexpr std::size_t T = F::seq_q, D = F::d_model;
  M& mha = *new (g_object) M(g_arena);
  C cache(g_attn);
  emha::Status status = mha.set_weights(feature_weights<F>());
  const emha::ForwardOptions opt = feature_options<F>();
  const std::size_t out_n = batch * T * D;
  for (std::size_t i = 0; i < out_n; ++i) g_out[i] = sentinel;  // a row no step wrote fails
  bool lengths_ok = true, guards_ok = true;
  std::size_t t = 0;
  while (t < T && status == emha::Status::ok) {
    const std::size_t n = t == 0 ? prefill : 1;
    for (std::size_t b = 0; b < batch; ++b)
      for (std::size_t i = 0; i < n * D; ++i) g_x[b * n * D + i] = F::query[(b * T + t) * D + i];
    fill_guarded(g_y, batch * n * D);
    struct Step {
      M& mha;
      C& cache;
      const emha::AttentionShape shape;
      const emha::Span<const float> x;
      const emha::Span<float> y;
      const emha::ForwardOptions& opt;
      emha::Status status;
    } step{mha, cache, {n, cache.keys(n, batch), batch, emha::Layout::batch_first}, {g_x, batch * n * D},
           {g_y + guard, batch * n * D}, opt, status};
    const std::size_t used = stack_bytes_used(
        [](void* p) {
          Step& s = *static_cast<Step*>(p);
          s.status = s.mha.forward(s.shape, s.x, s.y, s.cache, s.opt);
        },
        &step);
    if (used > g_forward_stack) g_forward_stack = used;
    status = step.status;
    guards_ok = guards_ok && guards_intact(g_y, batch * n * D);
    for (std::size_t b = 0; b < batch; ++b) {
      lengths_ok = lengths_ok && cache.length(b) == t + n;
      for (std::size_t i = 0; i < n * D; ++i) g_out[(b * T + t) * D + i] = g_y[guard + b * n * D + i];
    }
    t += n;
  }
  const double tol = feature_tolerance<F>();
  const double err = max_scaled_error(g_out, F::out, out_n);
  const auto e = parity_errors<F>(g_out, out_n);
  EMHA_INFO(F::name << " decoded, batch " << static_cast<unsigned>(batch) << (Prepack ? ", pre-packed" : ", weights in place")
                    << ": status " << int(status) << " at token " << static_cast<unsigned>(t));
  EMHA_INFO("max |emha - torch| / (1 + |torch|) = " << err << ", tolerance " << tol);
  EMHA_CHECK(status == emha::Status::ok);
  EMHA_CHECK(lengths_ok);
  EMHA_CHECK(guards_ok);
  EMHA_CHECK(err <= tol);
  EMHA_CHECK(mha.arena().high_water() <= M::arena_bytes);
  if (Prepack && status == emha::Status::ok && batch == F::batch)
    EMHA_MESSAGE("decode parity vs float64, " << F::name << " (" << static_cast<unsigned>(prefill)
                                              << "-token prefill, then steps of 1): emha max " << e.mine
                                              << ", torch float32 max " << e.theirs << ", ratio " << e.mine / e.theirs
                                              << (e.mine <= 2.0 * e.theirs ? " (within 2x)" : " (OVER 2x)"));
  mha.~M();
}

template <class F>
void run_fixture() {
  for (Path p : {Path::fused, Path::unfused, Path::reference}) {
    run_parity<F, true>(p);
    run_parity<F, false>(p);  // weights read in place
  }
  if constexpr (F::causal) {
    run_decode<F, true>(F::batch);
    run_decode<F, false>(F::batch);
    if (F::batch > 1) run_decode<F, true>(1);
  }
}

template <class... F>
void run_all(std::tuple<F...>*) {
  (run_fixture<F>(), ...);
}

}  // namespace

EMHA_TEST_CASE("relative_bucket equals HF's _relative_position_bucket run by torch") {
  check_all_buckets(static_cast<emha::feature_fixtures::bucket_tables*>(nullptr));
}

EMHA_TEST_CASE("head_dim / QK-norm / Config::scale / T5 relative bias match PyTorch on every path") {
  run_all(static_cast<Fixtures*>(nullptr));
  EMHA_MESSAGE(static_cast<unsigned>(std::tuple_size_v<Fixtures>) << " feature fixtures, each fused, unfused, "
                                                                      "reference and (causal) decoded");
  report_forward_stack(g_forward_stack, "model-family features");
}

// SPDX-License-Identifier: Apache-2.0
// The model-family features of the layer against PyTorch references written from the Hugging Face
// modules' math (tests/attention/gen_feature_fixtures.py, read by feature_support.hpp): head_dim
// independent of d_model / heads (wider and narrower, GQA, with and without biases), QK-norm
// (Qwen3's per-head x_hat * w, Gemma 3's per-head x_hat * (1 + w), OLMo-2's over the whole
// projection; each before RoPE), a compile-time Config::scale (T5's 1, Gemma's
// query_pre_attn_scalar**-0.5) and T5's relative position bias (encoder and decoder), on the host
// (every fixture) and the firmware (emha::feature_fixtures::small).
//   - relative_bucket against HF's _relative_position_bucket run by torch, over the fixtures'
//     settings, T5's 32 / 128 both ways for relative positions -600 .. 600, and settings where
//     torch's float32 log and the same formula in double disagree;
//   - every path: fused (no attention weights), unfused (per-head attention weights out, compared
//     with torch's) and the scalar reference, weights pre-packed and read in place;
//   - decoding the causal fixtures through a KvCache (a 3-token prefill, then one token per step:
//     with kv_heads < heads the GQA decode step), batch F::batch (both weight modes) and batch 1
//     (pre-packed), against torch's one causal forward: the cache holds normalized, rotated keys,
//     T5's bias at absolute positions.
//   Asserted: |emha - torch| within the float32 error budget of two implementations
//   (feature_tolerance). Printed: emha's max error against the float64 truth over torch
//   float32's own (the parity criterion; not asserted, a one-ULP question near 1).
// Buffers: all static; on the firmware the seed suites' (seed_buffers.hpp: object slot, caller
// arena, guarded outputs; the attention-weight buffer also holds the KvCache while decoding),
// checked at compile time; forward() runs through the stack probe (support/stack_use.hpp).
// The same checks for int8 weights (W8A32, tests/attention/gen_w8_fixtures.py): three of these
// modules quantized per output channel, against the dequantized module's float64 truth; each
// also prints what the quantization moved and the int8 layer against the float layer.
// Threads, the run-time scale override and bad weights are test_layer_features_host.cpp's.

#include <cmath>
#include <cstddef>
#include <new>
#include <tuple>
#include <type_traits>
#include <utility>

#include "attention/feature_support.hpp"
#include "attention/parity_buffers.hpp"
#include "attention/seed_buffers.hpp"
#include "emha/kernels/relative_bias.hpp"
#include "support/stack_use.hpp"
#include "support/unit.hpp"

namespace {

using namespace emha::test;

using Fixtures = feature_fixture_list;
// Every fixture whose buffers these are (the int8 ones have their feature twins' sizes).
using AllFixtures = decltype(std::tuple_cat(std::declval<feature_fixture_list>(), std::declval<w8_fixture_list>()));

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
constexpr std::size_t largest = largest_of<Size, AllFixtures>;

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

// Positions first .. first + n - 1 against torch's buckets; not a template (one copy of the checks).
void check_buckets(std::size_t buckets, std::size_t max_distance, bool bidirectional, long first,
                   const unsigned char* bucket, std::size_t n) {
  std::size_t wrong = 0, got_there = 0;
  long first_wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::ptrdiff_t rel = static_cast<std::ptrdiff_t>(first + long(i));
    const std::size_t got = emha::relative_bucket(rel, buckets, max_distance, bidirectional);
    if (got != bucket[i] && wrong++ == 0) {
      first_wrong = long(rel);
      got_there = got;
    }
  }
  EMHA_INFO("buckets " << static_cast<unsigned>(buckets) << ", max_distance " << static_cast<unsigned>(max_distance)
                       << (bidirectional ? ", bidirectional" : ", causal") << ": " << static_cast<unsigned>(wrong)
                       << " positions differ from torch's, the first " << first_wrong << " (emha "
                       << static_cast<unsigned>(got_there) << ")");
  EMHA_CHECK(wrong == 0);
}

template <class... T>
void check_all_buckets(std::tuple<T...>*) {
  (check_buckets(T::buckets, T::max_distance, T::bidirectional, T::first, T::bucket, sizeof(T::bucket)), ...);
}

// --- one fixture and one layer, type-erased ------------------------------------------------------
// The checks below are not templates, so the firmware holds one copy of them (per fixture and
// weight mode they would cost its code region ~10 KB each); run_parity and run_decode fill these in.

struct Fixture {
  const char* name;
  const char* module;
  std::size_t batch, seq, d_model, heads;
  const float* query;         // [B, S, D]
  const float* out;           // torch float32 [B, S, D]
  const double* out_f64;      // the float64 truth
  const float* attn_weights;  // torch float32 [B, H, S, S]
  emha::ForwardOptions options;
  double tolerance, weights_tolerance;
};

template <class F>
Fixture fixture_of() {
  return {F::name,     F::module,          F::batch,
          F::seq_q,    F::d_model,         F::heads,
          F::query,    F::out,             F::out_f64,
          F::attn_weights, feature_options<F>(), feature_tolerance<F>(),
          feature_weights_tolerance<F>()};
}

// One forward(): the trampoline's argument (forward or forward_reference without a cache, the
// cache form with one).
struct Call {
  void* mha;
  void* cache;
  emha::AttentionShape shape;
  emha::Span<const float> x;
  emha::Span<float> out;
  const emha::ForwardOptions* options;
  emha::Status status;
};

struct Layer {
  void* mha;
  void* cache;                   // decoding: the layer's KvCache
  void (*forward)(void* call);   // the stack probe's trampoline
  void (*reference)(void* call);
  std::size_t (*keys)(const void* cache, std::size_t n, std::size_t batch);
  std::size_t (*length)(const void* cache, std::size_t b);
  void (*reset)(void* cache);
  const emha::ArenaRef* arena;
  std::size_t arena_bytes;
  bool prepack;
  emha::Status weights_status;   // set_weights'
};

// Max errors against the float64 truth (emha's, torch float32's) and max |emha - torch| / (1 +
// |torch|), over n outputs.
struct Errors {
  double mine = 0, theirs = 0, scaled = 0;
};
Errors errors_of(const Fixture& f, const float* y, std::size_t n) {
  Errors e;
  for (std::size_t i = 0; i < n; ++i) {
    const double m = std::fabs(double(y[i]) - f.out_f64[i]), t = std::fabs(double(f.out[i]) - f.out_f64[i]);
    if (m > e.mine || std::isnan(m)) e.mine = std::isnan(m) ? INFINITY : m;
    if (t > e.theirs) e.theirs = t;
  }
  e.scaled = max_scaled_error(y, f.out, n);
  return e;
}

// --- forward: fused, unfused, reference --------------------------------------------------------

enum class Path { fused, unfused, reference };
constexpr const char* path_names[] = {"fused", "unfused", "reference"};

void check_parity(const Fixture& f, const Layer& l, Path path) {
  const bool unfused = path == Path::unfused;
  const std::size_t out_n = f.batch * f.seq * f.d_model, w_n = f.batch * f.heads * f.seq * f.seq;
  emha::ForwardOptions opt = f.options;
  fill_guarded(g_out, out_n);
  fill_guarded(g_attn, w_n);
  if (unfused) opt.attn_weights = {g_attn + guard, w_n};
  Call call{l.mha, nullptr, {f.seq, f.seq, f.batch, emha::Layout::batch_first}, {f.query, out_n},
            {g_out + guard, out_n}, &opt, l.weights_status};
  if (call.status == emha::Status::ok && path == Path::reference) {
    l.reference(&call);
  } else if (call.status == emha::Status::ok) {
    const std::size_t used = stack_bytes_used(l.forward, &call);
    if (used > g_forward_stack) g_forward_stack = used;
  }
  const Errors e = errors_of(f, g_out + guard, out_n);
  EMHA_INFO(f.name << " (" << f.module << "), " << path_names[int(path)]
                   << (l.prepack ? ", pre-packed" : ", weights in place") << ": status " << int(call.status)
                   << ", max |emha - f64| " << e.mine << ", max |torch f32 - f64| " << e.theirs);
  EMHA_INFO("max |emha - torch| / (1 + |torch|) = " << e.scaled << ", tolerance " << f.tolerance);
  EMHA_CHECK(call.status == emha::Status::ok);
  EMHA_CHECK(e.scaled <= f.tolerance);
  EMHA_CHECK(guards_intact(g_out, out_n));
  EMHA_CHECK((g_attn[guard] != sentinel) == unfused);  // written only when asked for
  EMHA_CHECK(guards_intact(g_attn, w_n));
  if (unfused) {
    const double w_err = max_scaled_error(g_attn + guard, f.attn_weights, w_n);
    EMHA_INFO("attention weights: max |emha - torch| / (1 + |torch|) = " << w_err << ", tolerance "
                                                                           << f.weights_tolerance);
    EMHA_CHECK(w_err <= f.weights_tolerance);
  }
  EMHA_CHECK(l.arena->high_water() <= l.arena_bytes);
  if (l.prepack && call.status == emha::Status::ok)
    EMHA_MESSAGE("parity vs float64, " << path_names[int(path)] << " " << f.name << ": emha max " << e.mine
                                       << ", torch float32 max " << e.theirs << ", ratio " << e.mine / e.theirs
                                       << (e.mine <= 2.0 * e.theirs ? " (within 2x)" : " (OVER 2x)"));
}

// --- decoding through a KvCache ------------------------------------------------------------------

// Decodes the first `batch` sequences of a causal fixture from an empty cache: a `prefill`-token
// first step, then one token per step, every sequence together; step outputs gathered into g_out
// [batch, T, D] (the fixture's rows of those sequences), compared with torch's one causal forward.
void check_decode(const Fixture& f, const Layer& l, std::size_t batch) {
  const std::size_t T = f.seq, D = f.d_model, out_n = batch * T * D;
  l.reset(l.cache);
  for (std::size_t i = 0; i < out_n; ++i) g_out[i] = sentinel;  // a row no step wrote fails
  bool lengths_ok = true, guards_ok = true;
  emha::Status status = l.weights_status;
  std::size_t t = 0;
  while (t < T && status == emha::Status::ok) {
    const std::size_t n = t == 0 ? prefill : 1;
    for (std::size_t b = 0; b < batch; ++b)
      for (std::size_t i = 0; i < n * D; ++i) g_x[b * n * D + i] = f.query[(b * T + t) * D + i];
    fill_guarded(g_y, batch * n * D);
    Call step{l.mha, l.cache, {n, l.keys(l.cache, n, batch), batch, emha::Layout::batch_first}, {g_x, batch * n * D},
              {g_y + guard, batch * n * D}, &f.options, status};
    const std::size_t used = stack_bytes_used(l.forward, &step);
    if (used > g_forward_stack) g_forward_stack = used;
    status = step.status;
    guards_ok = guards_ok && guards_intact(g_y, batch * n * D);
    for (std::size_t b = 0; b < batch; ++b) {
      lengths_ok = lengths_ok && l.length(l.cache, b) == t + n;
      for (std::size_t i = 0; i < n * D; ++i) g_out[(b * T + t) * D + i] = g_y[guard + b * n * D + i];
    }
    t += n;
  }
  const Errors e = errors_of(f, g_out, out_n);
  EMHA_INFO(f.name << " decoded, batch " << static_cast<unsigned>(batch) << (l.prepack ? ", pre-packed" : ", weights in place")
                   << ": status " << int(status) << " at token " << static_cast<unsigned>(t));
  EMHA_INFO("max |emha - torch| / (1 + |torch|) = " << e.scaled << ", tolerance " << f.tolerance);
  EMHA_CHECK(status == emha::Status::ok);
  EMHA_CHECK(lengths_ok);
  EMHA_CHECK(guards_ok);
  EMHA_CHECK(e.scaled <= f.tolerance);
  EMHA_CHECK(l.arena->high_water() <= l.arena_bytes);
  if (l.prepack && status == emha::Status::ok && batch == f.batch)
    EMHA_MESSAGE("decode parity vs float64, " << f.name << " (" << static_cast<unsigned>(prefill)
                                              << "-token prefill, then steps of 1): emha max " << e.mine
                                              << ", torch float32 max " << e.theirs << ", ratio " << e.mine / e.theirs
                                              << (e.mine <= 2.0 * e.theirs ? " (within 2x)" : " (OVER 2x)"));
}

// --- the fixtures' layers ----------------------------------------------------------------------

// The layer of F placed in the object slot, its three paths checked. (Named as test_parity.cpp's:
// stack_budget.py's --probe, run_(parity|decode)<.*_FUN, finds the trampolines.)
template <class F, bool Prepack>
void run_parity() {
  using M = Mha<F, Prepack>;
  fits_the_buffers<F, Prepack>();
  M& mha = *new (g_object) M(g_arena);  // placement: no heap
  const Layer l{&mha,
                nullptr,
                [](void* p) {
                  Call& c = *static_cast<Call*>(p);
                  c.status = static_cast<M*>(c.mha)->forward(c.shape, c.x, c.x, c.x, c.out, *c.options);
                },
                [](void* p) {
                  Call& c = *static_cast<Call*>(p);
                  c.status = static_cast<M*>(c.mha)->forward_reference(c.shape, c.x, c.x, c.x, c.out, *c.options);
                },
                nullptr,
                nullptr,
                nullptr,
                &mha.arena(),
                M::arena_bytes,
                Prepack,
                mha.set_weights(feature_weights<F>())};
  const Fixture f = fixture_of<F>();
  for (Path p : {Path::fused, Path::unfused, Path::reference}) check_parity(f, l, p);
  mha.~M();
}

// The layer of F and its KvCache (storage: g_attn), decoding batch F::batch and batch 1.
template <class F, bool Prepack>
void run_decode() {
  using M = Mha<F, Prepack>;
  using C = Cache<F, Prepack>;
  fits_the_buffers<F, Prepack>();
  M& mha = *new (g_object) M(g_arena);
  C cache(g_attn);
  const Layer l{&mha,
                &cache,
                [](void* p) {
                  Call& c = *static_cast<Call*>(p);
                  c.status = static_cast<M*>(c.mha)->forward(c.shape, c.x, c.out, *static_cast<C*>(c.cache), *c.options);
                },
                nullptr,
                [](const void* c, std::size_t n, std::size_t batch) { return static_cast<const C*>(c)->keys(n, batch); },
                [](const void* c, std::size_t b) { return static_cast<const C*>(c)->length(b); },
                [](void* c) { static_cast<C*>(c)->reset(); },
                &mha.arena(),
                M::arena_bytes,
                Prepack,
                mha.set_weights(feature_weights<F>())};
  const Fixture f = fixture_of<F>();
  check_decode(f, l, F::batch);
  if (F::batch > 1 && Prepack) check_decode(f, l, 1);
  mha.~M();
}

template <class F>
void run_fixture() {
  run_parity<F, true>();
  run_parity<F, false>();  // weights read in place
  if constexpr (F::causal) {
    run_decode<F, true>();
    run_decode<F, false>();
  }
}

// An int8 fixture's layer with float weights (its dequantized ones).
template <class F>
struct FloatTwin : FeatureConfig<F, true> {
  static constexpr emha::WeightType weight_type = emha::WeightType::f32;
};

// An int8-weight fixture: its layer on every path as above, against the dequantized module's
// truth; printed beside it, what the quantization itself moved (the float64 outputs of the
// module before and after), and the int8 layer against the float layer on the dequantized weights.
template <class F>
void run_int8_fixture() {
  run_fixture<F>();
  constexpr std::size_t n = F::batch * F::seq_q * F::d_model;
  using M8 = Mha<F, true>;
  M8& mha = *new (g_object) M8(g_arena);
  emha::Status s8 = mha.set_weights(feature_weights<F>());
  const emha::Span<const float> x{F::query, n};
  const emha::ForwardOptions o = feature_options<F>();
  const emha::AttentionShape shape{F::seq_q, F::seq_kv, F::batch, emha::Layout::batch_first};
  if (s8 == emha::Status::ok) s8 = mha.forward(shape, x, x, x, {g_out, n}, o);
  mha.~M8();
  double quantization = 0, vs_float = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double q = std::fabs(F::out_f64[i] - F::out_unquantized_f64[i]);
    quantization = q > quantization ? q : quantization;
  }
  // The float layer (FeatureConfig without int8) on the dequantized floats, into g_attn.
  using MF = emha::MultiHeadAttention<FloatTwin<F>, emha::ArenaOwnership::caller>;
  static_assert(sizeof(MF) <= sizeof(g_object) && n <= sizeof(g_attn) / sizeof(float));
  MF& fl = *new (g_object) MF(g_arena);
  emha::Status sf = fl.set_weights(feature_weights<F, false>());
  if (sf == emha::Status::ok) sf = fl.forward(shape, x, x, x, {g_attn, n}, o);
  fl.~MF();
  for (std::size_t i = 0; i < n; ++i) {
    const double d = std::fabs(double(g_out[i]) - double(g_attn[i]));
    vs_float = d > vs_float ? d : vs_float;
  }
  EMHA_CHECK(s8 == emha::Status::ok);
  EMHA_CHECK(sf == emha::Status::ok);
  // The int8 panels dequantize to exactly the float layer's weights (float(q) * scale) and both
  // layers run the same pre-packed tiles in the same order: the same bits.
  EMHA_CHECK(vs_float == 0);
  EMHA_MESSAGE("int8 weights, " << F::name << ": the quantization moved the float64 output by up to " << quantization
                                << "; emha int8 vs emha float on the dequantized weights: max |difference| "
                                << vs_float);
}

template <class... F>
void run_all_int8(std::tuple<F...>*) {
  (run_int8_fixture<F>(), ...);
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

EMHA_TEST_CASE("int8 weights (W8A32) match the dequantized module on every path") {
  run_all_int8(static_cast<w8_fixture_list*>(nullptr));
  report_forward_stack(g_forward_stack, "int8 weights");
}

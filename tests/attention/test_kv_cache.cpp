// SPDX-License-Identifier: Apache-2.0
// Incremental decoding through a KvCache on the host and the firmware: every causal
// self-attention fixture of seed_fixture_list (emha::seed_fixtures::small on the firmware, all on
// the host) is decoded one token at a time and in chunks of 3 through
// MultiHeadAttention::forward(shape, x, out, cache), with the weights pre-packed into the object and
// read in place, and the gathered outputs compared with torch's one causal forward over all T
// tokens (F::out) within the seed suite's budget (seed_tolerance). After each step every
// sequence's cache length is t + n. Buffers as test_seed_models.cpp: all static, sized at compile
// time for the largest fixture; the layer's object slot and arena are test_seed_models.cpp's
// (seed_buffers.hpp), the cache's storage a static float array (ArenaOwnership::caller).
// forward() runs through the stack probe (support/stack_use.hpp), measured on the firmware. The
// host's other decoding tests (chunks as large as the cache, the reference path, torchscale's
// prefill, ragged batches, rolling caches at their tightest, every bad input) are
// test_kv_cache_host.cpp's.

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

// What a KvCache serves: causal self-attention (xPos and sliding windows included) with the
// conventional head split (a flat_view head mixes positions: no cache).
template <class F>
constexpr bool decodes = F::causal && F::self_attention && F::head_split == 0;

// The fixtures of `small` that decode, as a std::tuple.
template <class... F>
auto decoding(std::tuple<F...>*)
    -> decltype(std::tuple_cat(std::conditional_t<decodes<F>, std::tuple<F>, std::tuple<>>()...));
using Fixtures = decltype(decoding(static_cast<seed_fixture_list*>(nullptr)));

constexpr std::size_t chunks[] = {1, 3};  // new tokens per forward() (the last step may be shorter)
constexpr std::size_t max_chunk = 3;

template <class F, bool Prepack>
using Mha = SeedMha<F, Prepack>;
// Room for all T tokens of every sequence (a sliding window's cache rolls over them: W <= T).
template <class F, bool Prepack>
using Cache = emha::KvCache<emha::test::SeedConfig<F, Prepack>, F::seq_kv, F::batch, emha::ArenaOwnership::caller>;

template <class F>
constexpr bool has_key_padding = std::is_array_v<decltype(F::key_padding_mask)>;

template <template <class> class Size>
constexpr std::size_t largest = largest_of<Size, Fixtures>;

template <class F>
struct CacheFloats : std::integral_constant<std::size_t, Cache<F, true>::floats> {};
template <class F>
struct StepFloats : std::integral_constant<std::size_t, F::batch * max_chunk * F::d_model> {};
template <class F>
struct MaskBools : std::integral_constant<std::size_t, has_key_padding<F> ? F::batch * F::seq_kv : 0> {};
template <class F>
struct TableFloats : std::integral_constant<std::size_t, F::add_sinusoidal ? F::seq_q * F::d_model : 0> {};

alignas(64) float g_cache[largest<CacheFloats>];  // the KvCache's storage: [B][T] rows of K | V
float g_x[largest<StepFloats>];                   // a step's new tokens [B, n, D]
float g_y[largest<StepFloats> + 2 * guard];       // a step's outputs [B, n, D], guarded
float g_out[largest<OutFloats>];                  // every step's outputs, in the fixture's layout
bool g_ignored[largest<MaskBools>];               // the key padding mask cut to a step's keys [B, kv]
float g_table[largest<TableFloats>];              // sinusoidal_table_f32 [T x D] (blog encoder)
std::size_t g_forward_stack = 0;                  // the most stack a forward() with a cache took

// One fixture's decoding, type-erased: the loop over the tokens and the checks are not templates,
// so the firmware holds one copy of them (as templates, instantiated for each of the 20 fixture
// and weight-mode pairs, they cost the M55 build ~75 KB of code). run_decode<F, Prepack> fills
// this in.
struct Decoding {
  const char* name;
  bool prepack;                   // weights pre-packed into the object, else read in place
  std::size_t batch, tokens, d;   // B, T, D
  bool batch_first;               // query and out: [B, T, D], else [T, B, D]
  const float* query;             // the fixture's tokens
  const bool* key_padding;        // [B, T] (T keys: self-attention), true = ignored; or null
  bool add_sinusoidal;            // x = query + emha's sinusoidal table (the blog encoder)
  const float* out;               // torch's causal forward over all T tokens, like query
  double tolerance;               // seed_tolerance<F>()
  emha::test::ParityErrors (*parity)(const float* y, std::size_t n);  // parity_errors<F>
  emha::ForwardOptions options;   // the fixture's: causal, its scale
  const emha::ArenaRef* arena;    // the layer's, and the bytes it may use
  std::size_t arena_bytes;
  void* mha;                      // the layer and its cache, of run_decode's types
  void* cache;
  void (*forward)(void* step);    // Step's forward(): the stack probe's trampoline
  std::size_t (*length)(const void* cache, std::size_t b);
  // The cache's keys(n, B) and first_key(b, n): a step's shape.seq_kv, and the position of its key
  // 0 (a sliding window's rolling cache holds only the last positions).
  std::size_t (*keys)(const void* cache, std::size_t n, std::size_t batch);
  std::size_t (*first_key)(const void* cache, std::size_t b, std::size_t n);
};

// One forward() with the cache: the trampoline's argument.
struct Step {
  const Decoding& d;
  const emha::AttentionShape shape;
  const emha::Span<const float> x;
  const emha::Span<float> y;
  const emha::ForwardOptions& options;
  emha::Status status;
};

// Row (b, t) of a fixture tensor [B, T, D] or [T, B, D].
std::size_t row_of(const Decoding& f, std::size_t b, std::size_t t) {
  return (f.batch_first ? b * f.tokens + t : t * f.batch + b) * f.d;
}

// Decodes the fixture's T tokens, `chunk` at a time for every sequence together: step t feeds
// tokens t .. t + n - 1 (x: [B, n, D], shape {n, keys, B}: t + n keys, or with a sliding window
// those its rolling cache holds) and scatters its [B, n, D] outputs to
// their rows of g_out, then checks g_out against torch's and every cache length after each step.
void decode(const Decoding& f, std::size_t chunk, emha::Status status) {
  const std::size_t B = f.batch, T = f.tokens, D = f.d;
  for (std::size_t i = 0; i < B * T * D; ++i) g_out[i] = sentinel;  // a row no step wrote fails
  if (f.add_sinusoidal && status == emha::Status::ok) status = emha::sinusoidal_table_f32(T, D, g_table);
  bool lengths_ok = true, guards_ok = true;
  std::size_t t = 0;
  for (; t < T && status == emha::Status::ok; t += chunk) {
    const std::size_t n = T - t < chunk ? T - t : chunk, kv = f.keys(f.cache, n, B);
    // x: each sequence's tokens t .. t + n - 1 (the blog encoder's with its sinusoidal encoding
    // added, x = emb + pe, as test_seed_models.cpp does for the whole query).
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < D; ++j)
          g_x[(b * n + i) * D + j] = f.add_sinusoidal ? f.query[row_of(f, b, t + i) + j] + g_table[(t + i) * D + j]
                                                      : f.query[row_of(f, b, t + i) + j];
    // The key padding mask [B, T] cut to the step's keys, positions first_key .. first_key + kv -
    // 1 of each sequence: [B, kv] (with a cache, masks are laid over shape.seq_kv keys).
    emha::ForwardOptions options = f.options;
    if (f.key_padding) {
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t j = 0; j < kv; ++j) g_ignored[b * kv + j] = f.key_padding[b * T + f.first_key(f.cache, b, n) + j];
      options.masks.key_ignored = {g_ignored, B * kv};
    }
    fill_guarded(g_y, B * n * D);
    Step step{f, {n, kv, B, emha::Layout::batch_first}, {g_x, B * n * D}, {g_y + guard, B * n * D}, options, status};
    const std::size_t used = stack_bytes_used(f.forward, &step);  // forward() with its stack measured
    if (used > g_forward_stack) g_forward_stack = used;
    status = step.status;
    guards_ok = guards_ok && guards_intact(g_y, B * n * D);
    for (std::size_t b = 0; b < B; ++b) {
      lengths_ok = lengths_ok && f.length(f.cache, b) == t + n;
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < D; ++j) g_out[row_of(f, b, t + i) + j] = g_y[guard + (b * n + i) * D + j];
    }
  }

  const std::size_t out_n = B * T * D;
  const double err = emha::test::max_scaled_error(g_out, f.out, out_n);
  const bool ok = status == emha::Status::ok && lengths_ok && guards_ok && err <= f.tolerance &&
                  f.arena->high_water() <= f.arena_bytes;
  EMHA_INFO(f.name << " (chunks of " << static_cast<unsigned>(chunk) << (f.prepack ? ", pre-packed" : ", weights in place")
                   << "): status " << int(status) << " at token " << static_cast<unsigned>(t));
  EMHA_INFO("max |emha-torch|/(1+|torch|) " << err << ", tolerance " << f.tolerance << ", arena high water "
                                            << static_cast<unsigned>(f.arena->high_water()) << " of "
                                            << static_cast<unsigned>(f.arena_bytes));
  EMHA_CHECK(status == emha::Status::ok);
  EMHA_CHECK(lengths_ok);  // every cache length t + n after each step
  EMHA_CHECK(guards_ok);   // each step's outputs within their guards
  EMHA_CHECK(err <= f.tolerance);
  EMHA_CHECK(f.arena->high_water() <= f.arena_bytes);
  // The parity criterion, as test_seed_models.cpp prints it (not asserted): emha's max error
  // against the float64 truth over torch float32's.
  if (ok && f.prepack) {
    const ParityErrors e = f.parity(g_out, out_n);
    EMHA_MESSAGE("decode parity vs float64, " << f.name << " chunks of " << static_cast<unsigned>(chunk) << ": ratio "
                                              << e.mine / e.theirs << (e.mine <= 2.0 * e.theirs ? " (within 2x)" : " (OVER 2x)"));
  }
}

// The layer and cache of one fixture and weight mode, placed in the static slots, decoded.
// (Named for stack_budget.py's --probe, run_(parity|decode)<.*_FUN, which finds the trampoline.)
template <class F, bool Prepack>
void run_decode(std::size_t chunk) {
  using M = Mha<F, Prepack>;
  using C = Cache<F, Prepack>;
  static_assert(sizeof(M) <= sizeof(g_seed_object) && alignof(M) <= 64, "object slot too small");
  static_assert(M::arena_bytes <= sizeof(g_seed_arena), "arena too small");
  static_assert(CacheFloats<F>::value <= sizeof(g_cache) / sizeof(float) &&
                    StepFloats<F>::value <= sizeof(g_x) / sizeof(float) &&
                    OutFloats<F>::value <= sizeof(g_out) / sizeof(float) && MaskBools<F>::value <= sizeof(g_ignored) &&
                    TableFloats<F>::value <= sizeof(g_table) / sizeof(float),
                "decode buffers too small");
  // Masks the seed options would lay over [T, T] keys; none of the decoding fixtures has one.
  static_assert(!std::is_array_v<decltype(F::attn_mask_additive)> && !std::is_array_v<decltype(F::attend_mask)> &&
                    !std::is_array_v<decltype(F::score_bias)>,
                "a [T, T] mask: cut it to each step's keys as decode() does the key padding");
  M& mha = *new (g_seed_object) M(g_seed_arena);  // placement: no heap
  C cache(g_cache);
  const emha::Status status = mha.set_weights(emha::test::seed_weights<F>());
  const bool* key_padding = nullptr;
  if constexpr (has_key_padding<F>) key_padding = F::key_padding_mask;
  const Decoding f{F::name,
                   Prepack,
                   F::batch,
                   F::seq_q,
                   F::d_model,
                   F::batch_first,
                   F::query,
                   key_padding,
                   F::add_sinusoidal,
                   F::out,
                   emha::test::seed_tolerance<F>(),
                   &emha::test::parity_errors<F>,
                   emha::test::seed_options<F>(),
                   &mha.arena(),
                   M::arena_bytes,
                   &mha,
                   &cache,
                   [](void* p) {
                     Step& s = *static_cast<Step*>(p);
                     s.status = static_cast<M*>(s.d.mha)->forward(s.shape, s.x, s.y, *static_cast<C*>(s.d.cache),
                                                                   s.options);
                   },
                   [](const void* c, std::size_t b) { return static_cast<const C*>(c)->length(b); },
                   [](const void* c, std::size_t n, std::size_t batch) { return static_cast<const C*>(c)->keys(n, batch); },
                   [](const void* c, std::size_t b, std::size_t n) { return static_cast<const C*>(c)->first_key(b, n); }};
  decode(f, chunk, status);
  mha.~M();
}

template <class F>
void run_fixture() {
  for (const std::size_t chunk : chunks) {
    run_decode<F, true>(chunk);
    run_decode<F, false>(chunk);
  }
}

template <class... F>
void run_all(std::tuple<F...>*) {
  (run_fixture<F>(), ...);
}

}  // namespace

EMHA_TEST_CASE("decoding through a KvCache equals torch's causal forward, in chunks of 1 and 3") {
  run_all(static_cast<Fixtures*>(nullptr));
  EMHA_MESSAGE(static_cast<unsigned>(std::tuple_size_v<Fixtures>)
               << " seed fixtures decoded in chunks of 1 and 3; cache storage " << static_cast<unsigned>(sizeof(g_cache))
               << " bytes (the seed suite's arena and object slot)");
  report_forward_stack(g_forward_stack, "decoding through a KvCache");
}

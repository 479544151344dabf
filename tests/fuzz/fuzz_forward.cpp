// SPDX-License-Identifier: Apache-2.0
// libFuzzer target (clang, ASan + UBSan): MultiHeadAttention's set_weights, forward and
// forward_reference, and ArenaRef::allocate, as an adversarial user calls them. Every config
// shape the test suite uses, every option, out-of-range shapes and enums, spans that are absent,
// short, null or overlapping, NaN/Inf and magnitudes across float's range. Asserts the contract
// itself (docs: mha.hpp, README "Numeric range"), not the arithmetic (the parity tests do that):
//   - the status is ok or a documented error; on an error out and attn_weights keep every bit;
//   - no byte outside any buffer changes (guards), inputs are never written;
//   - the arena's high-water mark stays within arena_bytes;
//   - inputs inside the documented finite range give finite outputs (fully masked rows too),
//     attention weights in [0, 1];
//   - a second identical call gives the same status and the same bits.
// A breach prints what broke and aborts, which libFuzzer records as a crash.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "attention/fixture_support.hpp"
#include "fixtures/all.hpp"
#include "fuzz_input.hpp"
#include "guarded_pool.hpp"

namespace {

using emha::Span;
using emha::Status;
using emha::fuzz::Input;
using emha::fuzz::Random;

[[noreturn]] void breach(const char* what) {
  std::fprintf(stderr, "emha contract breach: %s\n", what);
  std::abort();
}
void require(bool ok, const char* what) {
  if (!ok) breach(what);
}

emha::fuzz::GuardedPool<(12u << 20)> g_pool;  // static: the harness allocates nothing either

bool documented(Status s) {
  switch (s) {
    case Status::ok:
    case Status::null_pointer:
    case Status::invalid_argument:
    case Status::too_long:
    case Status::size_mismatch:
    case Status::no_space:
    case Status::overlap: return true;
    default: return false;  // the weight blob's statuses: not forward()'s
  }
}

// The harness's bulk loops (fills, hashes, comparisons) carry no coverage instrumentation:
// traced, their compares took ~80% of the time and steer nothing in emha. Not inlined either:
// inlined code is instrumented as part of its caller.
#define EMHA_FUZZ_UNTRACED __attribute__((no_sanitize("coverage"), noinline))

// A 64-bit hash of the bytes, eight at a time (any changed byte changes it but by a fluke).
EMHA_FUZZ_UNTRACED std::uint64_t hash(const void* p, std::size_t bytes) {
  const auto* b = static_cast<const unsigned char*>(p);
  std::uint64_t h = 1469598103934665603ull ^ bytes;
  std::size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, b + i, 8);
    h = (h ^ w) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
  }
  for (; i < bytes; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}
template <class T>
std::uint64_t hash_span(Span<const T> s, std::size_t needed) {
  return s.data ? hash(s.data, (s.size < needed ? s.size : needed) * sizeof(T)) : 0;
}

// A required span: mostly exactly `needed`, sometimes absent, null with a size, one short, or
// longer than needed (the buffer holds needed + 16 elements).
template <class T>
Span<T> required_span(Input& in, T* data, std::size_t needed) {
  switch (in.below(32)) {
    case 0: return {};
    case 1: return {nullptr, needed};
    case 2: return {data, needed ? needed - 1 : 0};
    case 3: return {data, needed + 16};
    default: return {data, needed};
  }
}
// An optional span that was chosen to be given: the same choices, never absent on purpose.
template <class T>
Span<T> given_span(Input& in, T* data, std::size_t needed) {
  const Span<T> s = required_span(in, data, needed);
  return s.data || s.size ? s : Span<T>{data, needed};
}

EMHA_FUZZ_UNTRACED void fill(Random& r, float* p, std::size_t n, float magnitude) {
  for (std::size_t i = 0; i < n; ++i) p[i] = r.symmetric() * magnitude;
}
EMHA_FUZZ_UNTRACED void fill_bools(Random& r, bool* p, std::size_t n, std::size_t percent) {
  for (std::size_t i = 0; i < n; ++i) p[i] = r.below(100) < percent;
}

// About `percent` % of p[0, n) become -inf (masked).
EMHA_FUZZ_UNTRACED void mask_some(Random& r, float* p, std::size_t n, std::size_t percent) {
  for (std::size_t i = 0; i < n; ++i)
    if (r.below(100) < percent) p[i] = -INFINITY;
}

// Every element finite.
EMHA_FUZZ_UNTRACED bool all_finite(const float* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isfinite(p[i])) return false;
  return true;
}
// Every element in [0, 1] (attention weights; their float sums may round just above 1).
EMHA_FUZZ_UNTRACED bool all_probabilities(const float* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (!(p[i] >= 0.0f && p[i] <= 1.0f + 1e-6f)) return false;
  return true;
}

// The magnitudes of one case and whether the README's finite range covers them.
struct Range {
  int x_exp = 0, w_exp = 0, mask_exp = 0;
  bool special = false;  // a NaN or an infinity was planted in an input, weight, mask or scale
};
bool inside_finite_range(const Range& r, std::size_t n, std::size_t d_k, float scale, bool additive) {
  const double x = std::ldexp(1.0, r.x_exp), w = std::ldexp(1.0, r.w_exp);
  const double s = scale != 0.0f ? std::fabs(double(scale)) : 1.0 / std::sqrt(double(d_k));
  return !r.special && double(n) * x * w <= 1e18 && double(n) * w <= 1e18 && s * double(d_k) <= 100 &&
         (!additive || std::ldexp(1.0, r.mask_exp) <= 1e37);
}

// Plants one NaN or infinity in p[0, n).
void plant_special(Input& in, float* p, std::size_t n) {
  if (!p || n == 0) return;
  const float values[3] = {NAN, INFINITY, -INFINITY};
  p[in.below(n)] = values[in.below(3)];
}

// The weights of config C from the pool, every element in [-2^w_exp, 2^w_exp].
template <class C>
emha::MhaWeights make_weights(Random& r, const Range& range) {
  constexpr std::size_t D = C::d_model;
  constexpr bool same = C::kdim == D && C::vdim == D;
  const float m = std::ldexp(1.0f, range.w_exp);
  emha::MhaWeights w;
  auto take = [&](std::size_t n) {
    float* p = g_pool.template take<float>(n);
    if (!p) breach("harness: weight pool exhausted");
    fill(r, p, n, m);
    return Span<const float>{p, n};
  };
  if (same) {
    w.in_proj_weight = take(3 * D * D);
  } else {
    w.q_proj_weight = take(D * D);
    w.k_proj_weight = take(D * C::kdim);
    w.v_proj_weight = take(D * C::vdim);
  }
  w.out_proj_weight = take(D * D);
  if (C::bias) {
    w.in_proj_bias = take(3 * D);
    w.out_proj_bias = take(D);
  }
  return w;
}

// set_weights with one span damaged: the status each damage must give. True if it took them.
template <class C>
bool damaged_set_weights(Input& in, emha::MultiHeadAttention<C, emha::ArenaOwnership::caller>& mha,
                         const emha::MhaWeights& good) {
  emha::MhaWeights w = good;
  Span<const float>* fields[7] = {&w.in_proj_weight, &w.q_proj_weight,  &w.k_proj_weight,
                                  &w.v_proj_weight,  &w.in_proj_bias,   &w.out_proj_weight,
                                  &w.out_proj_bias};
  Span<const float>& f = *fields[in.below(7)];
  const bool used = f.data != nullptr;
  Status want = Status::ok;
  switch (in.below(4)) {
    case 0: f = {}, want = used ? Status::null_pointer : Status::ok; break;
    case 1: f = {nullptr, 5}, want = Status::null_pointer; break;
    case 2:
      if (used) f.size -= 1, want = Status::size_mismatch;
      else f = good.out_proj_weight, want = Status::invalid_argument;
      break;
    default: f = {good.out_proj_bias.data ? good.out_proj_bias.data : good.out_proj_weight.data, 5},
             want = used ? Status::size_mismatch : Status::invalid_argument;
  }
  require(mha.set_weights(w) == want, "set_weights: a damaged span gave another status");
  return want == Status::ok;
}

// Storage for one object of each config (placement-new'd per case: the arena view is fixed at
// construction, and the pre-packed weights make some objects too big for the stack).
template <class C>
using Mha = emha::MultiHeadAttention<C, emha::ArenaOwnership::caller>;
template <class C>
alignas(Mha<C>) unsigned char g_object[sizeof(Mha<C>)];

template <class C>
void fuzz_config(Input& in) {
  constexpr std::size_t D = C::d_model, H = C::heads, dk = D / H;
  using M = Mha<C>;
  Random rnd(in.u64());
  Range range;
  range.x_exp = in.exponent(-40, 70);
  range.w_exp = in.exponent(-40, 70);
  range.mask_exp = in.exponent(-10, 127);

  // The object over a caller's arena: mostly exactly arena_bytes, sometimes less or misaligned.
  std::size_t arena_bytes = M::arena_bytes + 64;
  if (in.one_in(16)) arena_bytes = in.below(M::arena_bytes + 128);
  unsigned char* arena = g_pool.template take<unsigned char>(arena_bytes + 64);
  if (!arena) breach("harness: arena pool exhausted");
  const std::size_t skew = in.one_in(8) ? in.below(64) : 0;
  M& mha = *new (g_object<C>) M(emha::ArenaRef(arena + skew, arena_bytes));

  const emha::MhaWeights weights = make_weights<C>(rnd, range);
  bool has_weights = in.one_in(8) && damaged_set_weights<C>(in, mha, weights);
  if (!in.one_in(32)) {
    require(mha.set_weights(weights) == Status::ok, "set_weights refused good weights");
    has_weights = true;
  }

  // Shape: up to one past every maximum, layouts and batch included.
  emha::AttentionShape sh;
  sh.seq_q = in.below(C::max_seq_q + 2);
  sh.seq_kv = in.below(C::max_seq_kv + 2);
  sh.batch = in.below(C::max_batch + 2);
  sh.layout = in.one_in(32) ? static_cast<emha::Layout>(2 + in.below(254))
                            : (in.u8() & 1 ? emha::Layout::seq_first : emha::Layout::batch_first);
  const bool self = C::kdim == D && C::vdim == D && in.one_in(3);
  if (self) sh.seq_kv = sh.seq_q;
  const std::size_t B = sh.batch, sq = sh.seq_q, skv = sh.seq_kv;
  const std::size_t nq = B * sq * D, nk = B * skv * C::kdim, nv = B * skv * C::vdim, nout = B * sq * D;

  // Inputs.
  const float xm = std::ldexp(1.0f, range.x_exp);
  float* q = g_pool.template take<float>(nq + 16);
  float* k = self ? q : g_pool.template take<float>(nk + 16);
  const bool kv_shared = !self && C::kdim == C::vdim && in.one_in(4);
  float* v = self ? q : kv_shared ? k : g_pool.template take<float>(nv + 16);
  float* out = g_pool.template take<float>(nout + 16);
  if (!q || !k || !v || !out) breach("harness: input pool exhausted");
  fill(rnd, q, nq + 16, xm);
  if (!self) fill(rnd, k, nk + 16, xm);
  if (!self && !kv_shared) fill(rnd, v, nv + 16, xm);
  if (in.one_in(16)) {
    range.special = true;
    plant_special(in, q, nq);
  }
  const Span<const float> qs = required_span<const float>(in, q, nq);
  const Span<const float> ks = self ? qs : required_span<const float>(in, k, nk);
  const Span<const float> vs = self ? qs : kv_shared ? ks : required_span<const float>(in, v, nv);
  Span<float> outs = required_span(in, out, nout);

  // Options.
  emha::ForwardOptions opt;
  emha::AttentionMasks& m = opt.masks;
  m.causal = in.u8() & 1;
  switch (in.below(8)) {
    case 1: m.causal_offset = skv > sq ? skv - sq : 0; break;
    case 2: m.causal_offset = in.below(skv + 3); break;
    case 3: m.causal_offset = SIZE_MAX - in.u8(); break;
    case 4: m.causal_offset = std::size_t(PTRDIFF_MAX) + in.u8() - 128; break;
    case 5: m.causal_offset = std::size_t(in.u64()); break;
    default: m.causal_offset = 0;
  }
  m.attn_mask_shape = in.one_in(32) ? static_cast<emha::MaskShape>(3 + in.below(253))
                                    : static_cast<emha::MaskShape>(in.below(3));
  const std::size_t block = sq * skv;
  const std::size_t mask_n = m.attn_mask_shape == emha::MaskShape::per_head         ? H * block
                             : m.attn_mask_shape == emha::MaskShape::per_batch_head ? B * H * block
                                                                                    : block;
  if (in.one_in(4)) {
    bool* p = g_pool.template take<bool>(B * skv + 16);
    if (!p) breach("harness: mask pool exhausted");
    fill_bools(rnd, p, B * skv + 16, in.below(101));
    m.key_ignored = given_span<const bool>(in, p, B * skv);
  }
  if (in.one_in(4)) {
    std::size_t* p = g_pool.template take<std::size_t>(B + 16);
    if (!p) breach("harness: mask pool exhausted");
    for (std::size_t b = 0; b < B + 16; ++b) p[b] = in.below(skv + 2);  // skv + 1: invalid
    m.key_lengths = given_span<const std::size_t>(in, p, B);
  }
  if (in.one_in(4)) {
    bool* p = g_pool.template take<bool>(mask_n + 16);
    if (!p) breach("harness: mask pool exhausted");
    fill_bools(rnd, p, mask_n + 16, in.below(101));
    m.attn_masked = given_span<const bool>(in, p, mask_n);
  }
  float* additive = nullptr;
  if (in.one_in(4)) {
    additive = g_pool.template take<float>(mask_n + 16);
    if (!additive) breach("harness: mask pool exhausted");
    fill(rnd, additive, mask_n + 16, std::ldexp(1.0f, range.mask_exp));
    mask_some(rnd, additive, mask_n, in.below(101));
    if (in.one_in(16)) range.special = true, plant_special(in, additive, mask_n);
    m.attn_additive = given_span<const float>(in, additive, mask_n);
  }
  opt.average_attn_weights = in.u8() & 1;
  const std::size_t nw = B * block * (opt.average_attn_weights ? 1 : H);
  float* attn = nullptr;
  if (in.one_in(3)) {
    attn = g_pool.template take<float>(nw + 16);
    if (!attn) breach("harness: output pool exhausted");
    opt.attn_weights = given_span(in, attn, nw);
  }
  switch (in.below(16)) {
    case 1: opt.scale = std::ldexp(in.u8() & 1 ? 1.0f : -1.0f, in.exponent(-12, 12)); break;
    case 2: opt.scale = NAN, range.special = true; break;
    case 3: opt.scale = INFINITY, range.special = true; break;
    default: opt.scale = 0.0f;
  }
  // Outputs starting inside another buffer, now and then: refused (overlap, or an earlier
  // error), since an accepted call would write past that buffer into its guard.
  if (in.one_in(16)) {
    const std::size_t which = in.below(3);
    if (which == 0 && nq > 0) outs = {q + in.below(nq), nout};
    if (which == 1 && attn && nout > 0) opt.attn_weights = {out + in.below(nout), nw};
    if (which == 2 && additive && mask_n > 0) outs = {additive + in.below(mask_n), nout};
  }

  // Snapshots: the whole output buffers (guards are the pool's), and a hash of every input.
  const std::size_t out_bytes = (nout + 16) * sizeof(float), attn_bytes = attn ? (nw + 16) * sizeof(float) : 0;
  unsigned char* snap = g_pool.template take<unsigned char>(2 * (out_bytes + attn_bytes) + 1);
  if (!snap) breach("harness: snapshot pool exhausted");
  unsigned char* snap_out = snap;
  unsigned char* snap_attn = snap + out_bytes;
  unsigned char* first_out = snap + out_bytes + attn_bytes;
  unsigned char* first_attn = first_out + out_bytes;
  auto prefill = [&](std::uint64_t seed) {
    Random pr(seed);
    fill(pr, out, nout + 16, 1.0f);
    if (attn) fill(pr, attn, nw + 16, 1.0f);
    std::memcpy(snap_out, out, out_bytes);
    if (attn) std::memcpy(snap_attn, attn, attn_bytes);
  };
  auto inputs_hash = [&] {
    return hash_span(qs, nq) ^ 3 * hash_span(ks, nk) ^ 5 * hash_span(vs, nv) ^
           7 * hash_span(m.key_ignored, B * skv) ^ 11 * hash_span(m.key_lengths, B) ^
           13 * hash_span(m.attn_masked, mask_n) ^ 17 * hash_span(m.attn_additive, mask_n) ^
           19 * hash_span(weights.in_proj_weight, SIZE_MAX) ^ 23 * hash_span(weights.q_proj_weight, SIZE_MAX) ^
           29 * hash_span(weights.k_proj_weight, SIZE_MAX) ^ 31 * hash_span(weights.v_proj_weight, SIZE_MAX) ^
           37 * hash_span(weights.in_proj_bias, SIZE_MAX) ^ 41 * hash_span(weights.out_proj_weight, SIZE_MAX) ^
           43 * hash_span(weights.out_proj_bias, SIZE_MAX);
  };
  const std::uint64_t before = inputs_hash();
  constexpr std::size_t widest = D > C::kdim ? (D > C::vdim ? D : C::vdim) : (C::kdim > C::vdim ? C::kdim : C::vdim);
  const bool finite_expected = inside_finite_range(range, widest + 1, dk, opt.scale, m.attn_additive.data != nullptr);

  auto check_call = [&](Status s, const char* which) {
    require(documented(s), which);
    require(g_pool.intact(), "a guard byte changed: write outside a buffer");
    if (s != Status::ok) {
      require(std::memcmp(out, snap_out, out_bytes) == 0, "out written on an error");
      require(!attn || std::memcmp(attn, snap_attn, attn_bytes) == 0, "attn_weights written on an error");
      return;
    }
    require(mha.arena().high_water() <= M::arena_bytes, "arena high-water above arena_bytes");
    if (!finite_expected) return;
    require(all_finite(out, nout), "non-finite output in the finite range");
    require(!opt.attn_weights.data || all_probabilities(opt.attn_weights.data, nw),
            "attention weight outside [0, 1]");
  };

  prefill(rnd.next());
  const Status s1 = mha.forward(sh, qs, ks, vs, outs, opt);
  check_call(s1, "forward: undocumented status");
  if (!has_weights) require(s1 == Status::invalid_argument, "forward without weights ran");
  std::memcpy(first_out, out, out_bytes);
  if (attn) std::memcpy(first_attn, attn, attn_bytes);

  // The same call again over other output bytes: same status, same bits.
  prefill(rnd.next());
  const Status s2 = mha.forward(sh, qs, ks, vs, outs, opt);
  check_call(s2, "forward (second call): undocumented status");
  require(s2 == s1, "a second identical call gave another status");
  if (s1 == Status::ok) {
    require(std::memcmp(out, first_out, nout * sizeof(float)) == 0, "a second identical call gave other bits");
    require(!attn || std::memcmp(attn, first_attn, nw * sizeof(float)) == 0,
            "a second identical call gave other attention weights");
  }
  if (in.one_in(8)) {
    prefill(rnd.next());
    const Status sr = mha.forward_reference(sh, qs, ks, vs, outs, opt);
    check_call(sr, "forward_reference: undocumented status");
    require(sr == s1, "forward_reference validated differently from forward");
  }
  require(inputs_hash() == before, "an input changed");
  mha.~M();
}

// ArenaRef::allocate over a small buffer with any count and alignment.
void fuzz_arena(Input& in) {
  alignas(64) static unsigned char buffer[512];
  emha::ArenaRef arena(buffer + in.below(64), in.below(449));
  for (int i = 0; i < 4; ++i) {
    const std::size_t count = in.one_in(2) ? in.below(200) : std::size_t(in.u64());
    const std::size_t align = std::size_t(1) << in.below(10);
    const std::size_t used = arena.used();
    double* p = reinterpret_cast<double*>(buffer);
    const Status s = arena.allocate(count, p, align);
    require(s == Status::ok || s == Status::no_space, "allocate: undocumented status");
    if (s != Status::ok) {
      require(p == nullptr && arena.used() == used, "allocate: a refusal changed something");
      continue;
    }
    const auto b = reinterpret_cast<std::uintptr_t>(arena.base()), a = reinterpret_cast<std::uintptr_t>(p);
    require(a % align == 0 && a % alignof(double) == 0, "allocate: misaligned");
    require(a >= b && a + count * sizeof(double) <= b + arena.capacity(), "allocate: outside the arena");
    require(arena.used() <= arena.capacity() && arena.high_water() <= arena.capacity(), "allocate: over capacity");
  }
}

// Every config shape of the test suite: the fixtures' (tests/attention/fixtures), in place and
// pre-packed, and test_mha.cpp's long cross-attention with and without the unfused path.
namespace fx = emha::fixtures;
template <class F, bool Prepack = true>
using Fixture = emha::test::FixtureConfig<F, Prepack>;
struct LongCross : emha::MhaConfig<40, 4, 110, 210> {
  static constexpr std::size_t kdim = 24;
  static constexpr std::size_t max_batch = 2;
};
struct FusedOnly : LongCross {
  static constexpr bool attention_weights = false;
};
struct InPlace64 : emha::MhaConfig<64, 4, 32> {
  static constexpr bool prepack_weights = false;
};

using Runner = void (*)(Input&);
constexpr Runner runners[] = {
    fuzz_config<Fixture<fx::basic>>,         fuzz_config<Fixture<fx::batch_first_b2_heads>>,
    fuzz_config<Fixture<fx::bool_mask>>,     fuzz_config<Fixture<fx::causal_cross, false>>,
    fuzz_config<Fixture<fx::causal_self>>,   fuzz_config<Fixture<fx::combined>>,
    fuzz_config<Fixture<fx::cross>>,         fuzz_config<Fixture<fx::d200_h5, false>>,
    fuzz_config<Fixture<fx::dk15>>,          fuzz_config<Fixture<fx::dk4, false>>,
    fuzz_config<Fixture<fx::float_mask_per_head>>, fuzz_config<Fixture<fx::key_padding>>,
    fuzz_config<Fixture<fx::kvdim>>,         fuzz_config<Fixture<fx::kvdim, false>>,
    fuzz_config<Fixture<fx::nobias>>,        fuzz_config<Fixture<fx::nobias, false>>,
    fuzz_config<Fixture<fx::seq_first_b3>>,  fuzz_config<InPlace64>,
    fuzz_config<LongCross>,                  fuzz_config<FusedOnly>,
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Input in(data, size);
  g_pool.reset();
  const std::uint8_t pick = in.u8();
  if (pick == 255) {
    fuzz_arena(in);
  } else {
    runners[pick % (sizeof runners / sizeof runners[0])](in);
  }
  return 0;
}

// SPDX-License-Identifier: Apache-2.0
// The int8 KvCache (Config::kv_cache_type = KvType::int8) against float64 math, on the host
// (also under qemu-user on aarch64, armv7 and armv6) and the firmware, every buffer static. A
// causal self-attention layer with biases
// prefills P tokens through the cache, then decodes one token at a time; every path runs: fused
// (MHA per head, and GQA's stacked group step on SIMD builds), the split decode over more than
// mha_split_keys keys, unfused (attention weights out), the scalar reference, and two threads.
//
// What is checked, with nothing taken from the code under test but the cache's stored rows:
//   1. each stored row is the quantization of the float64 projection: scale = amax / 127 (to
//      float rounding), every q within half a step of x / scale (plus the float32 projection's
//      own error), in [-127, 127];
//   2. each output equals the float64 layer computed over the dequantized stored K and V,
//      within 2x (+ 2^-24 of the output's size) of the error the same layer with a float cache
//      makes against its own float64 math: that is float rounding, the same as a float cache's.
// What quantizing moves (the float64 layer over the quantized K, V or both against the float64
// layer over the exact K and V) is printed per case, keys and values apart: it is the scheme's
// error, reported, not bounded.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>

#include "emha/emha.hpp"
#include "emha/port.hpp"
#include "support/numeric.hpp"
#include "support/unit.hpp"

namespace {

template <std::size_t D, std::size_t H, std::size_t KV, std::size_t S, emha::KvType T, bool Weights>
struct CacheConfig : emha::MhaConfig<D, H, S, S> {
  static constexpr std::size_t kv_heads = KV;
  static constexpr emha::KvType kv_cache_type = T;
  static constexpr std::size_t max_threads = 2;
  static constexpr bool attention_weights = Weights;
};

// The cases: (D, H, K/V heads, tokens, prefill).
struct Case {
  std::size_t d, heads, kv_heads, n, prefill;
  const char* name;
};
constexpr Case cases[] = {
    {32, 4, 4, 40, 12, "MHA (32, 4 heads)"},         // per-head fused decode
    {64, 8, 2, 40, 9, "GQA (64, 8 heads, 2 K/V)"},   // the stacked group step
    {32, 4, 1, 520, 30, "MQA over 520 keys"},        // the split decode (past mha_split_keys)
};
// The unfused path (attention weights out): not for the firmware's 520 positions, whose
// attention-weight arena ([heads, S, S] floats, 4.3 MB) is over the boards' RAM.
constexpr bool unfused(const Case& c) { return !emha::test::on_firmware || c.n <= 40; }
template <std::size_t I, emha::KvType T>
using ConfigOf = CacheConfig<cases[I].d, cases[I].heads, cases[I].kv_heads, cases[I].n, T, unfused(cases[I])>;

// Sizes of the static buffers: the largest over the cases.
template <class F>
constexpr std::size_t largest(F f) {
  std::size_t m = 0;
  for (const Case& c : cases) m = std::max(m, f(c));
  return m;
}
constexpr std::size_t kv_dim_of(const Case& c) { return c.kv_heads * (c.d / c.heads); }
constexpr std::size_t max_in = largest([](const Case& c) { return (c.d + 2 * kv_dim_of(c)) * c.d; });
constexpr std::size_t max_rows = largest([](const Case& c) { return c.d + 2 * kv_dim_of(c); });
constexpr std::size_t max_d = largest([](const Case& c) { return c.d; });
constexpr std::size_t max_n = largest([](const Case& c) { return c.n; });
constexpr std::size_t max_nd = largest([](const Case& c) { return c.n * c.d; });
constexpr std::size_t max_nkv = largest([](const Case& c) { return c.n * kv_dim_of(c); });
// Attention weights of a step (unfused path): heads x q x keys for the prefill or a step.
constexpr std::size_t max_attn =
    largest([](const Case& c) { return std::max(c.heads * c.prefill * c.prefill, c.heads * c.n); });

// The largest Of<Config> over the cases' float and int8 configs.
template <class C>
using MhaOf = emha::MultiHeadAttention<C>;
template <class C>
using CacheOf = emha::KvCache<C>;
template <template <class> class Of, std::size_t... I>
constexpr std::size_t largest_object(std::index_sequence<I...>) {
  std::size_t m = 0;
  ((m = std::max({m, sizeof(Of<ConfigOf<I, emha::KvType::f32>>), sizeof(Of<ConfigOf<I, emha::KvType::int8>>)})), ...);
  return m;
}
constexpr auto case_indices = std::make_index_sequence<sizeof cases / sizeof cases[0]>();

// The layer's weights and inputs (float), then the float64 projections of every token: Q [n x H d_k],
// K and V [n x KV d_k].
float g_in_w[max_in], g_in_b[max_rows], g_out_w[max_d * max_d], g_out_b[max_d], g_x[max_nd];
double g_all[max_n * max_rows], g_q[max_nd], g_k[max_nkv], g_v[max_nkv];
// Layer outputs in float64: over the exact K and V, over the dequantized ones, one of each; scratch.
double g_exact[max_nd], g_deq[max_nd], g_mixed[max_nd], g_ctx[max_nd], g_s[max_n];
// A run's outputs: the float cache's and the int8 cache's, the int8 cache's rows dequantized.
float g_y32[max_nd], g_y8[max_nd], g_attn[max_attn];
double g_k8[max_nkv], g_v8[max_nkv];
alignas(64) unsigned char g_mha[largest_object<MhaOf>(case_indices)];
alignas(64) unsigned char g_cache[largest_object<CacheOf>(case_indices)];

void make_weights(const Case& c, std::uint64_t seed) {
  const std::size_t d = c.d, kv_dim = kv_dim_of(c);
  emha::test::fill_uniform(g_in_w, (d + 2 * kv_dim) * d, seed, -0.2f, 0.2f);
  emha::test::fill_uniform(g_in_b, d + 2 * kv_dim, seed + 1, -0.1f, 0.1f);
  emha::test::fill_uniform(g_out_w, d * d, seed + 2, -0.2f, 0.2f);
  emha::test::fill_uniform(g_out_b, d, seed + 3, -0.1f, 0.1f);
  emha::test::fill_uniform(g_x, c.n * d, seed + 4, -1.0f, 1.0f);
}

void project64(const Case& c) {
  const std::size_t d = c.d, kv_dim = kv_dim_of(c), rows = d + 2 * kv_dim;
  for (std::size_t t = 0; t < c.n; ++t)
    for (std::size_t r = 0; r < rows; ++r) {
      double acc = g_in_b[r];
      for (std::size_t i = 0; i < d; ++i) acc += double(g_x[t * d + i]) * double(g_in_w[r * d + i]);
      g_all[t * rows + r] = acc;
    }
  for (std::size_t t = 0; t < c.n; ++t) {
    std::copy(g_all + t * rows, g_all + t * rows + d, g_q + t * d);
    std::copy(g_all + t * rows + d, g_all + t * rows + d + kv_dim, g_k + t * kv_dim);
    std::copy(g_all + t * rows + d + kv_dim, g_all + (t + 1) * rows, g_v + t * kv_dim);
  }
}

// The float64 causal layer's output rows [n x d] over K and V [n x kv_dim] (token-major) into out.
void layer64(const Case& c, const double* k, const double* v, double* out) {
  const std::size_t d = c.d, n = c.n, dk = d / c.heads, kv_dim = kv_dim_of(c), group = c.heads / c.kv_heads;
  for (std::size_t t = 0; t < n; ++t)
    for (std::size_t h = 0; h < c.heads; ++h) {
      const std::size_t g = h / group;
      double m = -1e300;
      for (std::size_t j = 0; j <= t; ++j) {
        double acc = 0;
        for (std::size_t i = 0; i < dk; ++i) acc += g_q[t * d + h * dk + i] * k[j * kv_dim + g * dk + i];
        g_s[j] = acc / std::sqrt(double(dk));
        m = std::max(m, g_s[j]);
      }
      double sum = 0;
      for (std::size_t j = 0; j <= t; ++j) sum += (g_s[j] = std::exp(g_s[j] - m));
      for (std::size_t i = 0; i < dk; ++i) {
        double acc = 0;
        for (std::size_t j = 0; j <= t; ++j) acc += g_s[j] * v[j * kv_dim + g * dk + i];
        g_ctx[t * d + h * dk + i] = acc / sum;
      }
    }
  for (std::size_t t = 0; t < n; ++t)
    for (std::size_t o = 0; o < d; ++o) {
      double acc = g_out_b[o];
      for (std::size_t i = 0; i < d; ++i) acc += g_ctx[t * d + i] * double(g_out_w[o * d + i]);
      out[t * d + o] = acc;
    }
}

enum class Path { fused, unfused, reference, threads };

// Prefill c.prefill tokens, then decode the rest one at a time, on `path`, into y; for an int8
// cache its rows dequantized into g_k8, g_v8. Returns the stored rows that are not the
// quantization of the float64 ones, or -1 when a call failed.
template <class C>
long run(const Case& c, Path path, float* y) {
  using Mha = emha::MultiHeadAttention<C>;
  using Cache = emha::KvCache<C>;
  static_assert(sizeof(Mha) <= sizeof g_mha && sizeof(Cache) <= sizeof g_cache);
  constexpr std::size_t d = C::d_model, dk = d / C::heads, kv_dim = C::kv_heads * dk;
  Mha& mha = *new (g_mha) Mha();
  Cache& cache = *new (g_cache) Cache();
  emha::MhaWeights mw;
  mw.in_proj_weight = {g_in_w, (d + 2 * kv_dim) * d};
  mw.in_proj_bias = {g_in_b, d + 2 * kv_dim};
  mw.out_proj_weight = {g_out_w, d * d};
  mw.out_proj_bias = {g_out_b, d};
  emha::Status s = mha.set_weights(mw);
  for (std::size_t t = 0; t < c.n && s == emha::Status::ok; t = t == 0 ? c.prefill : t + 1) {
    const std::size_t q = t == 0 ? c.prefill : 1;
    emha::ForwardOptions o;
    o.masks.causal = true;
    const emha::AttentionShape shape{q, cache.keys(q), 1};
    if (path == Path::unfused) {
      o.attn_weights = {g_attn, C::heads * q * shape.seq_kv};
      o.average_attn_weights = false;
    }
    const emha::Span<const float> x{g_x + t * d, q * d};
    const emha::Span<float> out{y + t * d, q * d};
    s = path == Path::reference ? mha.forward_reference(shape, x, out, cache, o) : mha.forward(shape, x, out, cache, o);
  }
  long bad_rows = s == emha::Status::ok ? 0 : -1;
  if constexpr (C::kv_cache_type == emha::KvType::int8) {
    const auto view = cache.view_read();
    for (std::size_t kind = 0; kind < 2 && bad_rows >= 0; ++kind)
      for (std::size_t g = 0; g < C::kv_heads; ++g)
        for (std::size_t t = 0; t < c.n; ++t) {
          const std::size_t row = (kind * C::kv_heads + g) * view.capacity + t;  // batch 0
          const std::int8_t* q8 = view.data8 + row * dk;
          const double scale = view.scales[row];
          const double* exact = (kind == 0 ? g_k : g_v) + t * kv_dim + g * dk;
          double amax = 0;
          for (std::size_t i = 0; i < dk; ++i) amax = std::max(amax, std::fabs(exact[i]));
          bool bad = std::fabs(scale - amax / 127.0) > 1e-5 * amax / 127.0;
          for (std::size_t i = 0; i < dk; ++i) {
            bad = bad || q8[i] < -127 || std::fabs(double(q8[i]) - exact[i] / scale) > 0.5 + 1e-3;
            (kind == 0 ? g_k8 : g_v8)[t * kv_dim + g * dk + i] = double(q8[i]) * scale;
          }
          bad_rows += bad;
        }
  }
  cache.~Cache();
  mha.~Mha();
  return bad_rows;
}

double max_error(const float* y, const double* ref, std::size_t n) {
  double e = 0;
  for (std::size_t i = 0; i < n; ++i) e = std::max(e, std::fabs(double(y[i]) - ref[i]));
  return std::isfinite(e) ? e : 1e300;
}
double max_error(const double* a, const double* b, std::size_t n) {
  double e = 0;
  for (std::size_t i = 0; i < n; ++i) e = std::max(e, std::fabs(a[i] - b[i]));
  return e;
}
double max_abs(const double* a, std::size_t n) {
  double m = 0;
  for (std::size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(a[i]));
  return m;
}

template <std::size_t I>
void check_case() {
  constexpr Case c = cases[I];
  using C8 = ConfigOf<I, emha::KvType::int8>;
  using C32 = ConfigOf<I, emha::KvType::f32>;
  constexpr std::size_t dk = c.d / c.heads, nd = c.n * c.d;
  // Per position: d_k int8 values and a float scale for each K/V head, K and V; float: 4 d_k.
  static_assert(emha::KvCache<C8>::bytes == c.n * 2 * c.kv_heads * (dk + sizeof(float)), "int8 cache bytes");
  static_assert(emha::KvCache<C32>::bytes == c.n * 2 * c.kv_heads * dk * sizeof(float), "float cache bytes");
  make_weights(c, 7 + c.n);
  project64(c);
  layer64(c, g_k, g_v, g_exact);
  for (Path path : {Path::fused, Path::unfused, Path::reference, Path::threads}) {
    if (path == Path::unfused && !unfused(c)) continue;
    EMHA_INFO(c.name << " path " << int(path));
    if (path == Path::threads) EMHA_CHECK(emha::port::start_workers(2) >= 1);
    const long f_status = run<C32>(c, path, g_y32);
    const long bad_rows = run<C8>(c, path, g_y8);
    EMHA_CHECK(f_status == 0);
    EMHA_CHECK(bad_rows == 0);
    if (f_status != 0 || bad_rows != 0) return;
    const double float_error = max_error(g_y32, g_exact, nd);
    layer64(c, g_k8, g_v8, g_deq);
    const double int8_error = max_error(g_y8, g_deq, nd);
    EMHA_CHECK(int8_error <= 2 * float_error + max_abs(g_deq, nd) / 16777216.0);
    if (path == Path::fused) {
      const double moved = max_error(g_deq, g_exact, nd);
      layer64(c, g_k8, g_v, g_mixed);
      const double k_only = max_error(g_mixed, g_exact, nd);
      layer64(c, g_k, g_v8, g_mixed);
      const double v_only = max_error(g_mixed, g_exact, nd);
      EMHA_MESSAGE("int8 KvCache, " << c.name << ": float rounding " << int8_error << " (a float cache: "
                                    << float_error << "); quantization moves the output (max |y| "
                                    << max_abs(g_exact, nd) << ") by " << moved << ": int8 K alone " << k_only
                                    << ", int8 V alone " << v_only);
    }
  }
}

}  // namespace

EMHA_TEST_CASE("int8 KvCache: stored rows quantize the float64 K and V; outputs are float64's over them") {
  check_case<0>();
  check_case<1>();
  check_case<2>();
}

// SPDX-License-Identifier: Apache-2.0
// The int8 KvCache (Config::kv_cache_type = KvType::int8) against float64 math, on the host (and
// so under qemu-user on aarch64, armv7 and armv6). A causal self-attention layer with biases
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

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "emha/emha.hpp"
#include "emha/port.hpp"
#include "support/numeric.hpp"

namespace {

template <std::size_t D, std::size_t H, std::size_t KV, std::size_t S, emha::KvType T>
struct CacheConfig : emha::MhaConfig<D, H, S, S> {
  static constexpr std::size_t kv_heads = KV;
  static constexpr emha::KvType kv_cache_type = T;
  static constexpr std::size_t max_threads = 2;
};

// The float64 projections of every token: Q [n x H d_k], K and V [n x KV d_k].
struct Projections {
  std::vector<double> q, k, v;
};

struct Weights {
  std::vector<float> in_w, in_b, out_w, out_b, x;
};

Weights make_weights(std::size_t d, std::size_t kv_dim, std::size_t n, std::uint64_t seed) {
  Weights w;
  w.in_w = emha::test::uniform((d + 2 * kv_dim) * d, seed, -0.2f, 0.2f);
  w.in_b = emha::test::uniform(d + 2 * kv_dim, seed + 1, -0.1f, 0.1f);
  w.out_w = emha::test::uniform(d * d, seed + 2, -0.2f, 0.2f);
  w.out_b = emha::test::uniform(d, seed + 3, -0.1f, 0.1f);
  w.x = emha::test::uniform(n * d, seed + 4, -1.0f, 1.0f);
  return w;
}

Projections project64(const Weights& w, std::size_t d, std::size_t kv_dim, std::size_t n) {
  const std::size_t rows = d + 2 * kv_dim;
  std::vector<double> all(n * rows);
  for (std::size_t t = 0; t < n; ++t)
    for (std::size_t r = 0; r < rows; ++r) {
      double acc = w.in_b[r];
      for (std::size_t i = 0; i < d; ++i) acc += double(w.x[t * d + i]) * double(w.in_w[r * d + i]);
      all[t * rows + r] = acc;
    }
  Projections p;
  for (std::size_t t = 0; t < n; ++t) {
    p.q.insert(p.q.end(), all.begin() + t * rows, all.begin() + t * rows + d);
    p.k.insert(p.k.end(), all.begin() + t * rows + d, all.begin() + t * rows + d + kv_dim);
    p.v.insert(p.v.end(), all.begin() + t * rows + d + kv_dim, all.begin() + (t + 1) * rows);
  }
  return p;
}

// The float64 causal layer's output rows [n x d] over K and V [n x kv_dim] (token-major).
std::vector<double> layer64(const Weights& w, const Projections& p, const std::vector<double>& k,
                            const std::vector<double>& v, std::size_t d, std::size_t heads, std::size_t kv_heads,
                            std::size_t n) {
  const std::size_t dk = d / heads, kv_dim = kv_heads * dk, group = heads / kv_heads;
  std::vector<double> ctx(n * d), out(n * d), s(n);
  for (std::size_t t = 0; t < n; ++t)
    for (std::size_t h = 0; h < heads; ++h) {
      const std::size_t g = h / group;
      double m = -1e300;
      for (std::size_t j = 0; j <= t; ++j) {
        double acc = 0;
        for (std::size_t i = 0; i < dk; ++i) acc += p.q[t * d + h * dk + i] * k[j * kv_dim + g * dk + i];
        s[j] = acc / std::sqrt(double(dk));
        m = std::max(m, s[j]);
      }
      double sum = 0;
      for (std::size_t j = 0; j <= t; ++j) sum += (s[j] = std::exp(s[j] - m));
      for (std::size_t i = 0; i < dk; ++i) {
        double acc = 0;
        for (std::size_t j = 0; j <= t; ++j) acc += s[j] * v[j * kv_dim + g * dk + i];
        ctx[t * d + h * dk + i] = acc / sum;
      }
    }
  for (std::size_t t = 0; t < n; ++t)
    for (std::size_t o = 0; o < d; ++o) {
      double acc = w.out_b[o];
      for (std::size_t i = 0; i < d; ++i) acc += ctx[t * d + i] * double(w.out_w[o * d + i]);
      out[t * d + o] = acc;
    }
  return out;
}

enum class Path { fused, unfused, reference, threads };

struct Run {
  std::vector<float> y;              // [n x d]: prefill rows, then one row per step
  std::vector<double> k, v;          // an int8 cache's rows dequantized (token-major), else empty
  std::size_t bad_rows = 0;          // stored rows that are not the quantization of the float64 ones
};

// Prefill `prefill` tokens, then decode the rest one at a time, on `path`.
template <class C>
Run run(const Weights& w, const Projections& p, std::size_t n, std::size_t prefill, Path path) {
  using Mha = emha::MultiHeadAttention<C>;
  constexpr std::size_t d = C::d_model, dk = d / C::heads, kv_dim = C::kv_heads * dk;
  auto mha = std::make_unique<Mha>();
  auto cache = std::make_unique<emha::KvCache<C>>();
  emha::MhaWeights mw;
  mw.in_proj_weight = {w.in_w.data(), w.in_w.size()};
  mw.in_proj_bias = {w.in_b.data(), w.in_b.size()};
  mw.out_proj_weight = {w.out_w.data(), w.out_w.size()};
  mw.out_proj_bias = {w.out_b.data(), w.out_b.size()};
  REQUIRE(mha->set_weights(mw) == emha::Status::ok);
  Run r;
  r.y.assign(n * d, 0.0f);
  std::vector<float> attn(C::heads * n * n);
  for (std::size_t t = 0; t < n; t = t == 0 ? prefill : t + 1) {
    const std::size_t q = t == 0 ? prefill : 1;
    emha::ForwardOptions o;
    o.masks.causal = true;
    const emha::AttentionShape shape{q, cache->keys(q), 1};
    if (path == Path::unfused) {
      o.attn_weights = {attn.data(), C::heads * q * shape.seq_kv};
      o.average_attn_weights = false;
    }
    const emha::Span<const float> x{w.x.data() + t * d, q * d};
    const emha::Span<float> y{r.y.data() + t * d, q * d};
    const emha::Status s = path == Path::reference ? mha->forward_reference(shape, x, y, *cache, o)
                                                   : mha->forward(shape, x, y, *cache, o);
    REQUIRE(s == emha::Status::ok);
  }
  if constexpr (C::kv_cache_type == emha::KvType::int8) {
    const auto view = cache->view_read();
    r.k.assign(n * kv_dim, 0.0);
    r.v.assign(n * kv_dim, 0.0);
    for (std::size_t kind = 0; kind < 2; ++kind)
      for (std::size_t g = 0; g < C::kv_heads; ++g)
        for (std::size_t t = 0; t < n; ++t) {
          const std::size_t row = (kind * C::kv_heads + g) * view.capacity + t;  // batch 0
          const std::int8_t* q8 = view.data8 + row * dk;
          const double scale = view.scales[row];
          const double* exact = (kind == 0 ? p.k.data() : p.v.data()) + t * kv_dim + g * dk;
          double amax = 0;
          for (std::size_t i = 0; i < dk; ++i) amax = std::max(amax, std::fabs(exact[i]));
          bool bad = std::fabs(scale - amax / 127.0) > 1e-5 * amax / 127.0;
          for (std::size_t i = 0; i < dk; ++i) {
            bad = bad || q8[i] < -127 || std::fabs(double(q8[i]) - exact[i] / scale) > 0.5 + 1e-3;
            (kind == 0 ? r.k : r.v)[t * kv_dim + g * dk + i] = double(q8[i]) * scale;
          }
          r.bad_rows += bad;
        }
  }
  return r;
}

double max_error(const std::vector<float>& y, const std::vector<double>& ref) {
  double e = 0;
  for (std::size_t i = 0; i < y.size(); ++i) e = std::max(e, std::fabs(double(y[i]) - ref[i]));
  return std::isfinite(e) ? e : 1e300;
}
double max_error(const std::vector<double>& a, const std::vector<double>& b) {
  double e = 0;
  for (std::size_t i = 0; i < a.size(); ++i) e = std::max(e, std::fabs(a[i] - b[i]));
  return e;
}
double max_abs(const std::vector<double>& a) {
  double m = 0;
  for (double x : a) m = std::max(m, std::fabs(x));
  return m;
}

template <std::size_t D, std::size_t H, std::size_t KV, std::size_t S>
void check_case(std::size_t n, std::size_t prefill, const std::string& name) {
  using C8 = CacheConfig<D, H, KV, S, emha::KvType::int8>;
  using C32 = CacheConfig<D, H, KV, S, emha::KvType::f32>;
  constexpr std::size_t dk = D / H, kv_dim = KV * dk;
  // Per position: d_k int8 values and a float scale for each K/V head, K and V; float: 4 d_k.
  static_assert(emha::KvCache<C8>::bytes == S * 2 * KV * (dk + sizeof(float)), "int8 cache bytes");
  static_assert(emha::KvCache<C32>::bytes == S * 2 * KV * dk * sizeof(float), "float cache bytes");
  const Weights w = make_weights(D, kv_dim, n, 7 + n);
  const Projections p = project64(w, D, kv_dim, n);
  const std::vector<double> exact = layer64(w, p, p.k, p.v, D, H, KV, n);
  for (Path path : {Path::fused, Path::unfused, Path::reference, Path::threads}) {
    INFO(name << " path " << int(path));
    if (path == Path::threads) REQUIRE(emha::port::start_workers(2) >= 1);
    const Run f = run<C32>(w, p, n, prefill, path);
    const Run q = run<C8>(w, p, n, prefill, path);
    const double float_error = max_error(f.y, exact);
    const std::vector<double> deq = layer64(w, p, q.k, q.v, D, H, KV, n);
    const double int8_error = max_error(q.y, deq);
    CHECK(q.bad_rows == 0);
    CHECK(int8_error <= 2 * float_error + max_abs(deq) / 16777216.0);
    if (path == Path::fused) {
      const double moved = max_error(deq, exact);
      const double k_only = max_error(layer64(w, p, q.k, p.v, D, H, KV, n), exact);
      const double v_only = max_error(layer64(w, p, p.k, q.v, D, H, KV, n), exact);
      MESSAGE("int8 KvCache, " << name << ": float rounding " << int8_error << " (a float cache: " << float_error
                               << "); quantization moves the output (max |y| " << max_abs(exact) << ") by "
                               << moved << ": int8 K alone " << k_only << ", int8 V alone " << v_only);
    }
  }
}

}  // namespace

TEST_CASE("int8 KvCache: stored rows quantize the float64 K and V; outputs are float64's over them") {
  check_case<32, 4, 4, 40>(40, 12, "MHA (32, 4 heads)");       // per-head fused decode
  check_case<64, 8, 2, 40>(40, 9, "GQA (64, 8 heads, 2 K/V)");  // the stacked group step
  check_case<32, 4, 1, 520>(520, 430, "MQA over 430+ keys");    // the split decode (> 384 keys)
}

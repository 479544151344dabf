// SPDX-License-Identifier: Apache-2.0
// Incremental decoding: one decode step of MultiHeadAttention through a KvCache,
// batch 1, one thread, causal, biases on, fused path, weights pre-packed, against
//   prefix  emha's own forward over the whole prefix (len + 1 tokens, no cache): what a user
//           without a cache runs at every step (the speed-up);
//   read    a read-bandwidth loop over a buffer of the bytes the step must read (the weights:
//           W_in [(D + 2 kv_dim) x D] and W_out [D x D], and the cache's len + 1 K | V rows),
//           in this binary: the step's GB/s over it is the fraction of bandwidth it reaches.
// PyTorch doing the same step the way HF and torchscale do is bench/torch_decode.py (same run).
//
// Names: decode/D:<D>/H:<H>/KV:<kv_heads>/len:<cached positions>/<emha|prefix|read> (emha: the
// step; the cross builds' smoke run picks the first group by its /emha). Time unit:
// microseconds of the thread's CPU time. Counters: GBps (the step's bytes above per CPU second;
// for `read` the loop's own rate over the same bytes), bytes.
// layout/KV:<kv_heads>/len:<n>/<token_major|head_major>: the cache layout choice (kv_cache.hpp),
// measured: one step's cache work alone (append one position's K | V, then for each K/V head one
// query row's scores over n keys, softmax, context) with d_k = 64, on a token-major cache
// [pos][K | V of all heads] (emha's) against a head-major one [head][pos][d_k] (HF StaticCache's),
// through the same kernels (gemm_f32_rows reads either stride in place). Counter GBps: the cache
// bytes read per CPU second.
// Each layer also with int8 weights (WeightType::int8, quantized per row: /emha_w8, /prefix_w8),
// an int8 KvCache (/emha_kv8) and both (/emha_w8kv8), and a second summary table of their gains
// over float in the same run. Beside the layers at 128, 512 and 2048 cached positions, a narrow
// one (D 256, 4 heads) at 16384, whose cache outgrows L3 and is most of the step's bytes.
// At start-up each layer's step is checked against its own full-prefix forward (the last row);
// a deviation above 1e-3 stops the binary (exit status 1). A summary table of medians follows
// the benchmarks, with each step's fraction of its floor ("limit": its bytes at the read loop's
// rate or its FLOPs at the FMA peak, whichever takes longer).

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "emha/emha.hpp"
#include "support/aligned.hpp"
#include "support/bench_main.hpp"
#include "support/random.hpp"

namespace {

using emha_bench::Floats;

constexpr std::size_t kMaxLen = 2048;           // the longest cache benchmarked but one
constexpr std::size_t kLens[] = {128, 512, 2048};
constexpr std::size_t kLongLen = 16384;         // the long-context layer's cache

template <std::size_t D, std::size_t H, std::size_t KV, emha::WeightType W, emha::KvType T, std::size_t MaxLen>
struct DecodeConfig : emha::MhaConfig<D, H, MaxLen + 1, MaxLen + 1> {
  static constexpr std::size_t kv_heads = KV;
  static constexpr bool attention_weights = false;
  static constexpr emha::WeightType weight_type = W;
  static constexpr emha::KvType kv_cache_type = T;
};

// Per output channel (a row of [out, in]), symmetric: scale = amax / 127, q in [-127, 127]
// (emha::quantize_rows_s8, the int8 cache's quantizer).
void quantize_rows(const Floats& w, std::size_t rows, std::vector<std::int8_t>& q, Floats& scale) {
  const std::size_t cols = w.size() / rows;
  q.resize(w.size());
  scale = Floats(rows);
  emha::quantize_rows_s8(rows, cols, w.data(), cols, q.data(), cols, scale.data());
}

// One (D, H, kv_heads) layer with its cache, behind function pointers.
struct Layer {
  std::string name;  // "decode/D:512/H:8/KV:2"
  std::size_t d_model, kv_dim;
  std::size_t (*weight_bytes)();
  std::size_t cache_row_bytes;  // one position's K | V, all K/V heads (float, or int8 + scales)
  emha::Status (*prefill)(std::size_t len);              // cache := the first len tokens
  emha::Status (*step)(std::size_t len, float* y);       // token len through the cache, then truncate
  emha::Status (*prefix)(std::size_t len, float* y);     // forward over tokens 0 .. len, no cache
};

template <std::size_t D, std::size_t H, std::size_t KV, emha::WeightType W = emha::WeightType::f32,
          emha::KvType T = emha::KvType::f32, std::size_t MaxLen = kMaxLen>
struct LayerFor {
  using C = DecodeConfig<D, H, KV, W, T, MaxLen>;
  static constexpr bool int8 = W == emha::WeightType::int8;
  static constexpr std::size_t kv = KV * (D / H);
  struct State {
    Floats in_w = emha_bench::uniform((D + 2 * kv) * D, 41, -0.05f, 0.05f);
    Floats in_b = emha_bench::uniform(D + 2 * kv, 42, -0.1f, 0.1f);
    Floats out_w = emha_bench::uniform(D * D, 43, -0.05f, 0.05f);
    Floats out_b = emha_bench::uniform(D, 44, -0.1f, 0.1f);
    Floats x = emha_bench::uniform((MaxLen + 1) * D, 45);
    Floats y = Floats((MaxLen + 1) * D);
    std::vector<std::int8_t> in_q, out_q;  // int8 layers: the weights quantized per row
    Floats in_s, out_s;
    emha::MultiHeadAttention<C> mha;
    emha::KvCache<C> cache;
    std::size_t cached = 0;  // the prefill the cache holds (a step truncates back to it)
  };
  static State& state() {
    static std::unique_ptr<State> s = [] {
      auto p = std::make_unique<State>();
      emha::MhaWeights w;
      if constexpr (int8) {
        quantize_rows(p->in_w, D + 2 * kv, p->in_q, p->in_s);
        quantize_rows(p->out_w, D, p->out_q, p->out_s);
        w.in_proj_weight_int8 = {p->in_q.data(), p->in_q.size()};
        w.in_proj_weight_scale = {p->in_s.data(), p->in_s.size()};
        w.out_proj_weight_int8 = {p->out_q.data(), p->out_q.size()};
        w.out_proj_weight_scale = {p->out_s.data(), p->out_s.size()};
      } else {
        w.in_proj_weight = {p->in_w.data(), p->in_w.size()};
        w.out_proj_weight = {p->out_w.data(), p->out_w.size()};
      }
      w.in_proj_bias = {p->in_b.data(), p->in_b.size()};
      w.out_proj_bias = {p->out_b.data(), p->out_b.size()};
      if (p->mha.set_weights(w) != emha::Status::ok) std::abort();
      return p;
    }();
    return *s;
  }
  static emha::ForwardOptions causal() {
    emha::ForwardOptions o;
    o.masks.causal = true;
    return o;
  }
  // The same tokens each time: a cache already holding this prefill is kept (the long layer's
  // takes seconds, and Google Benchmark calls a benchmark several times).
  static emha::Status prefill(std::size_t len) {
    State& s = state();
    if (s.cached == len) return emha::Status::ok;
    s.cache.reset();
    s.cached = 0;
    const emha::Status st =
        s.mha.forward({len, len, 1}, {s.x.data(), len * D}, {s.y.data(), len * D}, s.cache, causal());
    if (st == emha::Status::ok) s.cached = len;
    return st;
  }
  static emha::Status step(std::size_t len, float* y) {
    State& s = state();
    const emha::Status st = s.mha.forward({1, len + 1, 1}, {s.x.data() + len * D, D}, {y, D}, s.cache, causal());
    if (st != emha::Status::ok) return st;
    return s.cache.truncate(0, len);
  }
  static emha::Status prefix(std::size_t len, float* y) {
    State& s = state();
    const emha::Span<const float> x{s.x.data(), (len + 1) * D};
    return s.mha.forward({len + 1, len + 1, 1}, x, x, x, {y, (len + 1) * D}, causal());
  }
  // Weights read per step: float, or int8 with a float scale per row.
  static std::size_t weight_bytes() {
    const std::size_t rows = (D + 2 * kv) + D;
    return int8 ? rows * D + rows * sizeof(float) : rows * D * sizeof(float);
  }
  static Layer layer() {
    return {"decode/D:" + std::to_string(D) + "/H:" + std::to_string(H) + "/KV:" + std::to_string(KV),
            D, kv, weight_bytes, emha::KvCache<C>::bytes / (MaxLen + 1), prefill, step, prefix};
  }
};

struct Case {
  const Layer* layer;
  std::size_t len;
  std::size_t bytes;  // weights + (len + 1) cache rows
  std::string name;
};
// The same layer with int8 weights (WeightType::int8; /emha_w8, /prefix_w8), an int8 KvCache
// (KvType::int8; /emha_kv8) and both (/emha_w8kv8), each with its own bytes.
struct CaseW8 {
  Case c;
  Case w8, kv8, both;
  bool prefix;  // the prefix forwards are benchmarked too
};
std::size_t case_bytes(const Layer& l, std::size_t len) {
  return l.weight_bytes() + (len + 1) * l.cache_row_bytes;
}

void bm_step(benchmark::State& st, const Case* c) {
  if (c->layer->prefill(c->len) != emha::Status::ok) return st.SkipWithError("prefill failed");
  Floats y(c->layer->d_model);
  for (auto _ : st) {
    if (c->layer->step(c->len, y.data()) != emha::Status::ok) return st.SkipWithError("step failed");
    benchmark::DoNotOptimize(y.data());
  }
  st.counters["GBps"] = benchmark::Counter(double(c->bytes) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["bytes"] = double(c->bytes);
}

void bm_prefix(benchmark::State& st, const Case* c) {
  Floats y((c->len + 1) * c->layer->d_model);
  for (auto _ : st) {
    if (c->layer->prefix(c->len, y.data()) != emha::Status::ok) return st.SkipWithError("forward failed");
    benchmark::DoNotOptimize(y.data());
  }
}

// Sums `bytes` of floats with 8 independent accumulators (vectorized by the compiler with the
// bench's ISA flags): the rate a pass over that many bytes can reach on this machine.
void bm_read(benchmark::State& st, const Case* c) {
  const Floats buf = emha_bench::uniform(c->bytes / sizeof(float), 46);
  const std::size_t n = buf.size() / 64 * 64;
  for (auto _ : st) {
    float acc[64] = {};
    for (std::size_t i = 0; i < n; i += 64)
      for (std::size_t j = 0; j < 64; ++j) acc[j] += buf[i + j];
    benchmark::DoNotOptimize(acc);
  }
  st.counters["GBps"] = benchmark::Counter(double(n * sizeof(float)) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["bytes"] = double(n * sizeof(float));
}

// The cache work of one step over `len` cached positions (see the header), in either layout.
struct LayoutCase {
  std::size_t kv_heads, len;
  bool token_major;
  std::string name;
};

void bm_layout(benchmark::State& st, const LayoutCase* c) {
  constexpr std::size_t dk = 64;
  const std::size_t kv = c->kv_heads * dk, n = c->len + 1;  // keys: the cached ones and the new one
  Floats cache = emha_bench::uniform(2 * kv * n, 47), q = emha_bench::uniform(kv, 48);
  const Floats row = emha_bench::uniform(2 * kv, 49);
  Floats scores(n), ctx(kv);
  for (auto _ : st) {
    for (std::size_t g = 0; g < c->kv_heads; ++g) {
      // token-major: position p's row is K (kv) | V (kv); head-major: K [heads][n][dk], then V.
      float* k = c->token_major ? cache.data() + g * dk : cache.data() + g * n * dk;
      float* v = c->token_major ? k + kv : cache.data() + (c->kv_heads + g) * n * dk;
      const std::size_t ld = c->token_major ? 2 * kv : dk;
      if (c->token_major && g == 0) std::copy(row.begin(), row.end(), cache.data() + c->len * 2 * kv);
      if (!c->token_major) {  // a head-major append: two scattered d_k rows per head
        std::copy(row.begin() + g * dk, row.begin() + (g + 1) * dk, k + c->len * dk);
        std::copy(row.begin() + kv + g * dk, row.begin() + kv + (g + 1) * dk, v + c->len * dk);
      }
      emha::gemm_f32_rows(1, n, dk, q.data() + g * dk, dk, k, ld, emha::Trans::transpose, scores.data(), n,
                          {0.125f, 0.0f, nullptr});
      emha::softmax_f32(1, n, scores.data(), n, scores.data(), n);
      emha::gemm_f32_rows(1, dk, n, scores.data(), n, v, ld, emha::Trans::none, ctx.data() + g * dk, dk);
    }
    benchmark::DoNotOptimize(ctx.data());
  }
  const double bytes = double(2 * kv * n * sizeof(float));
  st.counters["GBps"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// The step's output equals the last row of the full-prefix forward.
// limit: 1e-3; an int8 cache's step reads quantized K and V where the prefix forward has float
// ones, so its own limit is the quantization's (2e-2: a broken cache is off by O(1)).
bool check(const Layer& l, std::FILE* text, double limit) {
  const std::size_t len = 8, D = l.d_model;  // short: the cross builds run this under qemu
  Floats y(D), y_prefix((len + 1) * D);
  if (l.prefill(len) != emha::Status::ok || l.step(len, y.data()) != emha::Status::ok ||
      l.prefix(len, y_prefix.data()) != emha::Status::ok) {
    std::fprintf(text, "%s: a call failed\n", l.name.c_str());
    return false;
  }
  double worst = 0;  // an explicit maximum: aarch64 GCC 12 vectorizes an fmax reduction into an ICE
  for (std::size_t j = 0; j < D; ++j) {
    const double d = std::fabs(double(y[j]) - y_prefix[len * D + j]);
    if (!(d <= worst)) worst = d;  // a NaN becomes the worst
  }
  std::fprintf(text, "%s: decode step vs full-prefix forward at len %zu: max |difference| %.2e\n",
               l.name.c_str(), len, worst);
  return worst <= limit;
}

}  // namespace

int main(int argc, char** argv) {
  emha_bench::BenchRun run(argc, argv);
  if (run.status != 0) return run.status;
  constexpr auto i8 = emha::WeightType::int8;
  // The last layer's weights (42 MB float, 10.5 MB int8) outgrow a desktop's L3: its steps are
  // bound by memory. Its states are built on its first benchmark (not checked at start-up, no
  // prefix forward: the cross builds' smoke run skips it).
  static const Layer layers[] = {LayerFor<512, 8, 8>::layer(), LayerFor<512, 8, 2>::layer(),
                                 LayerFor<1024, 16, 4>::layer(), LayerFor<2048, 16, 4>::layer()};
  constexpr auto k8 = emha::KvType::int8;
  constexpr auto f32w = emha::WeightType::f32;
  static const Layer layers_w8[] = {LayerFor<512, 8, 8, i8>::layer(), LayerFor<512, 8, 2, i8>::layer(),
                                    LayerFor<1024, 16, 4, i8>::layer(), LayerFor<2048, 16, 4, i8>::layer()};
  static const Layer layers_kv8[] = {LayerFor<512, 8, 8, f32w, k8>::layer(), LayerFor<512, 8, 2, f32w, k8>::layer(),
                                     LayerFor<1024, 16, 4, f32w, k8>::layer(), LayerFor<2048, 16, 4, f32w, k8>::layer()};
  static const Layer layers_both[] = {LayerFor<512, 8, 8, i8, k8>::layer(), LayerFor<512, 8, 2, i8, k8>::layer(),
                                      LayerFor<1024, 16, 4, i8, k8>::layer(), LayerFor<2048, 16, 4, i8, k8>::layer()};
  // A long context on a narrow layer: its cache (32 MB of float K/V at 16384 positions beside 1 MB
  // of weights) outgrows L3, so the step's bytes are the cache's. One length, no prefix forward.
  static const Layer longs[] = {LayerFor<256, 4, 4, f32w, emha::KvType::f32, kLongLen>::layer(),
                                LayerFor<256, 4, 4, i8, emha::KvType::f32, kLongLen>::layer(),
                                LayerFor<256, 4, 4, f32w, k8, kLongLen>::layer(),
                                LayerFor<256, 4, 4, i8, k8, kLongLen>::layer()};
  static std::vector<CaseW8> cases;
  for (std::size_t i = 0; i < std::size(layers); ++i) {
    const Layer& l = layers[i];
    const bool large = i + 1 == std::size(layers);
    if (!large && (!check(l, run.text, 1e-3) || !check(layers_w8[i], run.text, 1e-3) ||
                   !check(layers_kv8[i], run.text, 2e-2) || !check(layers_both[i], run.text, 2e-2)))
      return 1;
    for (std::size_t len : kLens) {
      if (large && len == 512) continue;
      const std::string name = l.name + "/len:" + std::to_string(len);
      auto of = [&](const Layer& v) { return Case{&v, len, case_bytes(v, len), name}; };
      cases.push_back({of(l), of(layers_w8[i]), of(layers_kv8[i]), of(layers_both[i]), !large});
    }
  }
  {
    const std::string name = longs[0].name + "/len:" + std::to_string(kLongLen);
    auto of = [&](const Layer& v) { return Case{&v, kLongLen, case_bytes(v, kLongLen), name}; };
    cases.push_back({of(longs[0]), of(longs[1]), of(longs[2]), of(longs[3]), false});
  }
  for (const CaseW8& w : cases) {
    const std::string& n = w.c.name;
    const auto us = benchmark::kMicrosecond;
    benchmark::RegisterBenchmark((n + "/emha").c_str(), bm_step, &w.c)->Unit(us);
    benchmark::RegisterBenchmark((n + "/emha_w8").c_str(), bm_step, &w.w8)->Unit(us);
    benchmark::RegisterBenchmark((n + "/emha_kv8").c_str(), bm_step, &w.kv8)->Unit(us);
    benchmark::RegisterBenchmark((n + "/emha_w8kv8").c_str(), bm_step, &w.both)->Unit(us);
    if (w.prefix) {
      benchmark::RegisterBenchmark((n + "/prefix").c_str(), bm_prefix, &w.c)->Unit(us);
      benchmark::RegisterBenchmark((n + "/prefix_w8").c_str(), bm_prefix, &w.w8)->Unit(us);
    }
    benchmark::RegisterBenchmark((n + "/read").c_str(), bm_read, &w.c)->Unit(us);
  }
  static std::vector<LayoutCase> layouts;
  for (std::size_t kv_heads : {std::size_t(8), std::size_t(2)})
    for (std::size_t len : {std::size_t(512), kMaxLen})
      for (bool token_major : {true, false})
        layouts.push_back({kv_heads, len, token_major,
                           "layout/KV:" + std::to_string(kv_heads) + "/len:" + std::to_string(len) +
                               (token_major ? "/token_major" : "/head_major")});
  for (const LayoutCase& c : layouts)
    benchmark::RegisterBenchmark(c.name.c_str(), bm_layout, &c)->Unit(benchmark::kMicrosecond);
  run.run();
  // The step's floor on this core: the longer of reading its bytes at the read loop's rate and
  // its FLOPs at emha's FMA ceiling (2 per weight, and per cached position 4 per query column:
  // Q K^T and P V). "limit" is the step's fraction of that floor; "bound" says which one it is.
  const double peak = run.peaks().ceiling() * 1e9;
  std::fprintf(run.text, "\n%-32s %10s %12s %9s %8s %8s %6s %6s %7s\n", "decode step (medians)", "step us",
               "prefix us", "speed-up", "GB/s", "read GB/s", "frac", "limit", "bound");
  for (const CaseW8& w : cases) {
    const Case& c = w.c;
    const auto& s = run.results[c.name + "/emha"];
    const auto& p = run.results[c.name + "/prefix"];
    const auto& r = run.results[c.name + "/read"];
    if (s.time_s <= 0 || r.time_s <= 0) continue;
    const double gbps = double(c.bytes) * 1e-9 / s.time_s, read = r.counters.at("GBps");
    const std::size_t d = c.layer->d_model, kv = c.layer->kv_dim;
    const double flops = 2.0 * double((d + 2 * kv) * d + d * d) + 4.0 * double(d * (c.len + 1));
    const double read_s = double(c.bytes) * 1e-9 / read, flop_s = peak > 0 ? flops / peak : 0.0;
    const double floor_s = read_s > flop_s ? read_s : flop_s;
    std::fprintf(run.text, "%-32s %10.1f %12.1f %8.1fx %8.1f %8.1f %5.0f%% %5.0f%% %7s\n",
                 c.name.substr(7).c_str(), s.time_s * 1e6, p.time_s * 1e6,
                 p.time_s > 0 ? p.time_s / s.time_s : 0.0, gbps, read, 100.0 * gbps / read,
                 100.0 * floor_s / s.time_s, read_s >= flop_s ? "bytes" : "FLOPs");
  }
  // int8 weights (W8A32), an int8 cache and both against float, same run: the step's time and
  // its gain (float step / int8 step), each with its bytes; and the prefill-sized forward over
  // len + 1 tokens without a cache with int8 weights (its time over float's: compute-bound).
  std::fprintf(run.text, "\n%-26s %8s %14s %14s %14s %10s %8s\n", "int8 (medians, us: gain)", "float",
               "int8 weights", "int8 cache", "both", "prefix w8", "bytes");
  for (const CaseW8& w : cases) {
    const double s = run.results[w.c.name + "/emha"].time_s, s8 = run.results[w.c.name + "/emha_w8"].time_s;
    const double k8s = run.results[w.c.name + "/emha_kv8"].time_s, b8 = run.results[w.c.name + "/emha_w8kv8"].time_s;
    const double p = run.results[w.c.name + "/prefix"].time_s, p8 = run.results[w.c.name + "/prefix_w8"].time_s;
    if (s <= 0 || s8 <= 0 || k8s <= 0 || b8 <= 0) continue;
    std::fprintf(run.text, "%-26s %8.1f %7.1f %5.2fx %7.1f %5.2fx %7.1f %5.2fx %9.2fx %3.1f/%.1f MB\n",
                 w.c.name.substr(7).c_str(), s * 1e6, s8 * 1e6, s / s8, k8s * 1e6, s / k8s, b8 * 1e6, s / b8,
                 p > 0 && p8 > 0 ? p8 / p : 0.0, double(w.c.bytes) * 1e-6, double(w.both.bytes) * 1e-6);
  }
  return run.status;
}

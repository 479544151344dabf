// SPDX-License-Identifier: Apache-2.0
// One program per count of bench/icount/decode_icount.sh: a layer (256, 4 heads, 2 K/V heads,
// d_k 64, biases, causal) prefills 64 tokens through its KvCache, then runs `steps` decode steps
// at 64 cached positions (each step truncated away again, as emha_bench_decode does), with float
// or int8 weights and a float or int8 cache. The script counts the instructions of 1 and of 3
// steps: their difference halved is one step's.
//   decode_icount <f32|w8|kv8|w8kv8> <steps>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "emha/emha.hpp"

namespace {

constexpr std::size_t D = 256, H = 4, KV = 2, dk = D / H, kv = KV * dk, len = 64, rows = D + 2 * kv;

template <emha::WeightType W, emha::KvType T>
struct Config : emha::MhaConfig<D, H, len + 1, len + 1> {
  static constexpr std::size_t kv_heads = KV;
  static constexpr bool attention_weights = false;
  static constexpr emha::WeightType weight_type = W;
  static constexpr emha::KvType kv_cache_type = T;
};

std::vector<float> values(std::size_t n, std::uint64_t seed, float scale) {
  std::vector<float> v(n);
  for (float& x : v) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    x = scale * (float(seed >> 40) / float(1u << 24) - 0.5f);
  }
  return v;
}

// Per output row, symmetric: scale = amax / 127.
void quantize(const std::vector<float>& w, std::size_t n, std::vector<std::int8_t>& q, std::vector<float>& s) {
  const std::size_t k = w.size() / n;
  q.resize(w.size());
  s.resize(n);
  emha::quantize_rows_s8(n, k, w.data(), k, q.data(), k, s.data());
}

template <emha::WeightType W, emha::KvType T>
int run(int steps) {
  using C = Config<W, T>;
  auto mha = std::make_unique<emha::MultiHeadAttention<C>>();
  auto cache = std::make_unique<emha::KvCache<C>>();
  const std::vector<float> in_w = values(rows * D, 1, 0.1f), in_b = values(rows, 2, 0.2f);
  const std::vector<float> out_w = values(D * D, 3, 0.1f), out_b = values(D, 4, 0.2f);
  const std::vector<float> x = values((len + 1) * D, 5, 2.0f);
  std::vector<float> y((len + 1) * D);
  std::vector<std::int8_t> in_q, out_q;
  std::vector<float> in_s, out_s;
  emha::MhaWeights w;
  if constexpr (W == emha::WeightType::int8) {
    quantize(in_w, rows, in_q, in_s);
    quantize(out_w, D, out_q, out_s);
    w.in_proj_weight_int8 = {in_q.data(), in_q.size()};
    w.in_proj_weight_scale = {in_s.data(), in_s.size()};
    w.out_proj_weight_int8 = {out_q.data(), out_q.size()};
    w.out_proj_weight_scale = {out_s.data(), out_s.size()};
  } else {
    w.in_proj_weight = {in_w.data(), in_w.size()};
    w.out_proj_weight = {out_w.data(), out_w.size()};
  }
  w.in_proj_bias = {in_b.data(), in_b.size()};
  w.out_proj_bias = {out_b.data(), out_b.size()};
  emha::ForwardOptions o;
  o.masks.causal = true;
  if (mha->set_weights(w) != emha::Status::ok ||
      mha->forward({len, len, 1}, {x.data(), len * D}, {y.data(), len * D}, *cache, o) != emha::Status::ok)
    return 1;
  for (int i = 0; i < steps; ++i) {
    if (mha->forward({1, len + 1, 1}, {x.data() + len * D, D}, {y.data() + len * D, D}, *cache, o) !=
            emha::Status::ok ||
        cache->truncate(0, len) != emha::Status::ok)
      return 1;
  }
  std::printf("%g\n", double(y[len * D]));  // keeps the steps
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const int steps = std::atoi(argv[2]);
  constexpr auto f = emha::WeightType::f32, i8 = emha::WeightType::int8;
  constexpr auto cf = emha::KvType::f32, c8 = emha::KvType::int8;
  if (!std::strcmp(argv[1], "f32")) return run<f, cf>(steps);
  if (!std::strcmp(argv[1], "w8")) return run<i8, cf>(steps);
  if (!std::strcmp(argv[1], "kv8")) return run<f, c8>(steps);
  if (!std::strcmp(argv[1], "w8kv8")) return run<i8, c8>(steps);
  return 2;
}

// SPDX-License-Identifier: Apache-2.0
// No-heap proof: arena, kernel and attention calls run with the heap gate armed (any allocation
// is counted and fails). The counter is read before asserting: doctest itself may allocate.

#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <new>
#include <string>
#include <vector>

#include "emha/arena.hpp"
#include "emha/attention/mha.hpp"
#include "emha/io/weight_blob.hpp"
#include "export/fixtures/s8_nn_mha.hpp"
#include "emha/kernels/gemm.hpp"
#include "emha/kernels/mask.hpp"
#include "emha/kernels/norm.hpp"
#include "emha/kernels/rope.hpp"
#include "emha/kernels/sinusoidal.hpp"
#include "emha/kernels/softmax.hpp"
#include "emha/port.hpp"
#include "heap_gate.hpp"
#include "no_heap_attention.hpp"
#include "support/blob_bytes.hpp"

namespace {

float g_a[33 * 40], g_b[40 * 29], g_c[33 * 29], g_mask[29];
float g_cos[emha::rope_table_floats(40, 24)], g_sin[emha::rope_table_floats(40, 24)];
bool g_ignore[29];
emha::StaticArena<emha::gemm_f32_scratch_bytes(33, 29, 40)> g_scratch;

}  // namespace

TEST_CASE("negative control: the gate sees (and fails) malloc and operator new") {
  void* (*volatile alloc)(std::size_t) = std::malloc;  // volatile: not elided by the optimizer
  heap_gate::arm();
  void* p = alloc(64);
  const std::size_t malloc_attempts = heap_gate::disarm();
  heap_gate::arm();
  int* q = new (std::nothrow) int[16];
  const std::size_t new_attempts = heap_gate::disarm();  // >= 1: a failed new may retry
  CHECK(p == nullptr);
  CHECK(malloc_attempts == 1);
  CHECK(q == nullptr);
  CHECK(new_attempts >= 1);
}

TEST_CASE("arena and kernels do not touch the heap") {
  for (std::size_t i = 0; i < sizeof g_a / sizeof *g_a; ++i) g_a[i] = float(i % 7) * 0.25f;
  for (std::size_t i = 0; i < sizeof g_b / sizeof *g_b; ++i) g_b[i] = float(i % 5) * 0.5f;
  g_ignore[3] = true;

  heap_gate::arm();
  emha::StaticArena<512> arena;
  float* f = nullptr;
  const bool arena_ok = arena.allocate(16, f) == emha::Status::ok;
  const bool gemm_ok = emha::gemm_f32(33, 29, 40, g_a, 40, g_b, 29, emha::Trans::none, g_c, 29,
                                      g_scratch) == emha::Status::ok;
  const bool gemm_t_ok = emha::gemm_f32(29, 33, 29, g_b, 29, g_c, 29, emha::Trans::transpose, g_a,
                                        33, g_scratch) == emha::Status::ok;
  emha::mask_causal_f32(33, 29, 2, g_c, 29);
  emha::mask_key_ignore_f32(33, 29, g_ignore, g_c, 29);
  emha::mask_add_f32(33, 29, g_mask, 0, g_c, 29);
  emha::mask_alibi_f32(33, 29, -3, 0.25f, g_c, 29);
  const bool slopes_ok = emha::alibi_slopes(12, g_mask) == emha::Status::ok;
  const bool pe_ok = emha::sinusoidal_table_f32(33, 40, g_a) == emha::Status::ok;
  emha::softmax_f32(33, 29, g_c, 29, g_c, 29, emha::SoftmaxOptions{0.5f, g_mask, 0});
  emha::layer_norm_f32(29, 40, g_a, 40, g_a, 40, g_b, g_b + 40, 1e-5f);
  emha::rms_norm_f32(29, 40, g_a, 40, g_a, 40, g_b, 1e-5f);
  const bool table_ok = emha::rope_table_f32(40, 24, 10000.0f, g_cos, g_sin) == emha::Status::ok;
  const emha::RopeTable table{g_cos, g_sin, 40, 24};
  const bool rope_ok = emha::rope_f32(33, 5, 8, emha::RopePairing::half, 0, table, g_a, 40) ==
                           emha::Status::invalid_argument &&  // d_rot 24 > head_dim 8: refused
                       emha::rope_f32(33, 1, 40, emha::RopePairing::half, 7, table, g_a, 40) == emha::Status::ok &&
                       emha::rope_f32(33, 1, 40, emha::RopePairing::interleaved, 0, table, g_a, 40) ==
                           emha::Status::ok;
  const emha::RopeTable head_table{g_cos, g_sin, 40, 24};
  const bool xpos_ok = emha::xpos_f32(33, 1, 24, 40, true, 512.0f, head_table, g_a, 40) == emha::Status::ok;
  const std::size_t attempts = heap_gate::disarm();

  CHECK(arena_ok);
  CHECK(gemm_ok);
  CHECK(gemm_t_ok);
  CHECK(table_ok);
  CHECK(rope_ok);
  CHECK(xpos_ok);
  CHECK(slopes_ok);
  CHECK(pe_ok);
  CHECK(attempts == 0);
}

TEST_CASE("MultiHeadAttention construction and forward do not touch the heap") {
  heap_gate::arm();
  const NoHeapAttentionResult r = run_attention_without_heap();
  const std::size_t attempts = heap_gate::disarm();
  CHECK(r.ok);
  CHECK(attempts == 0);
}

TEST_CASE("the layers around attention (positions, norms, labml's mask) do not touch the heap") {
  heap_gate::arm();
  const NoHeapAttentionResult r = run_seed_layers_without_heap();
  const std::size_t attempts = heap_gate::disarm();
  CHECK(r.ok);
  CHECK(attempts == 0);
}

TEST_CASE("decoding through a KvCache (prefill, truncate, decode, a rolling window, static K/V) does not touch the heap") {
  heap_gate::arm();
  const NoHeapAttentionResult r = run_cache_without_heap();
  const std::size_t attempts = heap_gate::disarm();
  CHECK(r.ok);
  CHECK(attempts == 0);
}

TEST_CASE("int8 weights and an int8 KvCache (quantize, set, prefill, decode, unfused) do not touch the heap") {
  heap_gate::arm();
  const NoHeapAttentionResult r = run_int8_without_heap();
  const std::size_t attempts = heap_gate::disarm();
  CHECK(r.ok);
  CHECK(attempts == 0);
}

TEST_CASE("the full-integer int8 layer (set, forward, reference, probabilities out) does not touch the heap") {
  heap_gate::arm();
  const NoHeapAttentionResult r = run_s8_without_heap();
  const std::size_t attempts = heap_gate::disarm();
  CHECK(r.ok);
  CHECK(attempts == 0);
}

TEST_CASE("the 16x8 layer (set, forward, reference, probabilities out) does not touch the heap") {
  heap_gate::arm();
  const NoHeapAttentionResult r = run_s16x8_without_heap();
  const std::size_t attempts = heap_gate::disarm();
  CHECK(r.ok);
  CHECK(attempts == 0);
}

TEST_CASE("a forward split over the port's worker threads does not touch the heap") {
  REQUIRE(emha::port::start_workers(2) == 2);  // outside the gate: creating threads allocates
  heap_gate::arm();
  const NoHeapAttentionResult r = run_threaded_attention_without_heap();
  const std::size_t attempts = heap_gate::disarm();
  CHECK(r.ok);
  CHECK(attempts == 0);
}

namespace {
struct BlobLayer : emha::MhaConfig<32, 4, 8> {};
}  // namespace

TEST_CASE("loading a weight blob (valid, then corrupt) and taking its weights do not touch the heap") {
  // Built before the gate: the blob stands for a file the application read or mapped.
  emha::test::BlobBytes blob = emha::test::make_blob({32, 4, 4, 32, 32, 0xF},
                                                     {{1, 96, 32}, {5, 96, 1}, {6, 32, 32}, {7, 32, 1}});
  static emha::MultiHeadAttention<BlobLayer> mha;
  heap_gate::arm();
  emha::MhaWeights w;
  const emha::Status loaded = emha::load_weights<BlobLayer>({blob.bytes.data(), blob.bytes.size()}, w);
  const emha::Status taken = mha.set_weights(w);
  blob.bytes[200] ^= 1;
  const emha::Status corrupt = emha::load_weights<BlobLayer>({blob.bytes.data(), blob.bytes.size()}, w);
  const std::size_t attempts = heap_gate::disarm();
  CHECK(loaded == emha::Status::ok);
  CHECK(taken == emha::Status::ok);
  CHECK(corrupt == emha::Status::bad_checksum);
  CHECK(attempts == 0);
}

TEST_CASE("loading a full-integer layer's blob (valid, then corrupt) and taking its weights do not touch the heap") {
  // Read before the gate: the exporter's version 4 blob (tests/export/gen_s8_export.py).
  std::ifstream f(std::string(EMHA_EXPORT_FIXTURES) + "/s8_nn_mha.bin", std::ios::binary);
  std::vector<unsigned char> bytes{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  REQUIRE(bytes.size() > 160);
  static emha::MultiHeadAttention<s8_export::nn_mha::Config> layer;
  heap_gate::arm();
  emha::MhaS8Weights w;
  const emha::Status loaded = emha::load_weights<s8_export::nn_mha::Config>({bytes.data(), bytes.size()}, w);
  const emha::Status taken = layer.set_weights(w);
  bytes[200] ^= 1;
  const emha::Status corrupt = emha::load_weights<s8_export::nn_mha::Config>({bytes.data(), bytes.size()}, w);
  const std::size_t attempts = heap_gate::disarm();
  CHECK(loaded == emha::Status::ok);
  CHECK(taken == emha::Status::ok);
  CHECK(corrupt == emha::Status::bad_checksum);
  CHECK(attempts == 0);
}

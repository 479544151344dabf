// SPDX-License-Identifier: Apache-2.0
// gemm_w8a32 on the host only: the cases too large for the firmware's RAM (two blocks of k, m
// past gemm_mc and the per-panel limit, n past one block, decode rows wide enough for every
// build's side-by-side GEMV panels), std::vector buffers. The bound and the prepacked bits check
// are gemm_w8a32_check.hpp's; the cases both targets run are test_gemm_w8a32.cpp's.

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "emha/kernels/gemm_w8a32.hpp"
#include "kernels/gemm_w8a32_check.hpp"

using emha::GemmOptions;
using emha::gemm_kc;
using emha::gemm_mc;
using emha::test::W8Case;

namespace {

void check(const W8Case& t, std::uint64_t seed) {
  const std::size_t ld = emha::test::w8_lda(t), ldc = emha::test::w8_ldc(t);
  std::vector<float> a(t.m * ld), scale(t.n), bias(t.n), c0(t.m * ldc), c(c0.size()), c_ref(c0.size()), c64(c0.size());
  std::vector<std::int8_t> w(t.n * ld);
  std::vector<unsigned char> memory(emha::test::w8_check_arena_bytes(t));
  emha::ArenaRef arena(memory.data(), memory.size());
  emha::test::check_w8a32(t, seed, {a.data(), w.data(), scale.data(), bias.data(), c0.data(), c.data(),
                                    c_ref.data(), c64.data(), &arena});
}

}  // namespace

TEST_CASE("gemm_w8a32: decode rows over wide W (side-by-side GEMV panels), k blocks, options") {
  std::uint64_t seed = 300;
  for (std::size_t m : {1u, 2u, 3u, 4u})
    for (std::size_t n : {127u, 128u, 300u, 1040u}) {
      check({m, n, 70}, seed++);
      check({m, n, 64, 3, GemmOptions{0.5f, 1.0f, nullptr, true}, true}, seed++);
    }
  check({1, 260, gemm_kc + 37, 1, GemmOptions{1.0f, 0.5f, nullptr, true}, true}, seed++);
  check({1, 513, gemm_kc + 1, 0, GemmOptions{-1.0f, 0.0f, nullptr}, true}, seed++);
}

TEST_CASE("gemm_w8a32: m past gemm_mc and the per-panel limit, n past one block, two blocks of k") {
  constexpr std::size_t nc = emha::gemm_nc(gemm_kc);
  std::uint64_t seed = 900;
  check({gemm_mc + 5, 70, gemm_kc + 44, 0, GemmOptions{1.0f, 0.5f, nullptr}, true}, seed++);
  check({29, nc + 21, gemm_kc + 5, 1}, seed++);
  check({160, nc + 21, gemm_kc + 5, 1, GemmOptions{1.0f, 0.0f, nullptr, true}, false}, seed++);
  check({128, 384, 128, 0, GemmOptions{}, true}, seed++);  // a projection of the layer
  check({256, 200, 512, 2, GemmOptions{0.5f, 1.0f, nullptr}, true}, seed++);
  check({580, 1040, 64}, seed++);
  for (std::size_t s : emha::test::tail_sizes) check({s + 60, s + 90, s + 30, 1, GemmOptions{}, s % 2 == 1}, seed++);
}

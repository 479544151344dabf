// SPDX-License-Identifier: Apache-2.0
// gemm_f32 on the host only: the cases too large for the firmware's RAM (m, n, k up to 1040, B in
// place up to 4160 floats, GEMV rows over two kc blocks), std::vector buffers, and the kernel's
// contracts that need them (fused multiply-adds, packed-buffer sizes, scratch sizes, k_blocks'
// accuracy). The bound is gemm_check.hpp's; the sweeps over every tail and the
// cases both targets run are test_gemm.cpp's.

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "emha/kernels/gemm.hpp"
#include "emha/kernels/gemm_ref.hpp"
#include "emha/simd.hpp"
#include "kernels/gemm_check.hpp"
#include "support/numeric.hpp"

using emha::GemmOptions;
using emha::Status;
using emha::Trans;
using emha::gemm_kc;
using emha::gemm_mc;
using emha::test::GemmCase;

namespace {

// Scratch for the largest case below (m, n, k <= 600), from an arena, never the heap.
// Covers every case below: gemm_f32_scratch_bytes is nondecreasing in m, n and k.
emha::StaticArena<emha::gemm_f32_scratch_bytes(600, 600, 600)> g_scratch;

// emha::test::check_gemm over buffers and an arena of this case's size.
void check_gemm(const GemmCase& t, std::uint64_t seed) {
  const std::size_t ldc = emha::test::gemm_ldc(t);
  std::vector<float> a(t.m * emha::test::gemm_lda(t)), b(emha::test::gemm_b_rows(t) * emha::test::gemm_ldb(t)),
      bias(t.n), c0(t.m * ldc), c(c0.size()), c_ref(c0.size()), c64(c0.size());
  std::vector<unsigned char> memory(emha::test::gemm_check_arena_bytes(t));
  emha::ArenaRef arena(memory.data(), memory.size());
  emha::test::check_gemm(t, seed, {a.data(), b.data(), bias.data(), c0.data(), c.data(), c_ref.data(), c64.data(), &arena});
}

}  // namespace

TEST_CASE("gemm_f32: leading dimensions wider than the matrix, alpha, beta, bias") {
  std::uint64_t seed = 500;
  for (std::size_t s : {1u, 7u, 9u, 17u, 33u}) {
    for (Trans tr : {Trans::none, Trans::transpose}) {
      check_gemm({s, s + 2, s + 1, tr, 5}, seed++);
      check_gemm({s, 19, 23, tr, 3, GemmOptions{0.5f, 0.0f, nullptr}, true}, seed++);
      check_gemm({s, 19, 23, tr, 3, GemmOptions{1.0f, -1.5f, nullptr}, false}, seed++);
      check_gemm({23, s, 11, tr, 1, GemmOptions{-2.0f, 0.25f, nullptr}, true}, seed++);
    }
  }
}

TEST_CASE("gemm_f32: blocks of K, M and N larger than one packed panel") {
  // k > gemm_kc (two k blocks: the second accumulates), m > gemm_mc.
  check_gemm({97, 70, gemm_kc + 44, Trans::none, 0, GemmOptions{1.0f, 0.5f, nullptr}, true}, 900);
  check_gemm({131, 45, gemm_kc + 34, Trans::transpose, 2, GemmOptions{0.7f, 0.0f, nullptr}, true}, 901);
  check_gemm({200, 300, 40, Trans::transpose}, 902);
  // n > one block's columns (gemm_nc(kc), 128 at kc = gemm_kc) and k > gemm_kc. A block of
  // m * kc <= gemm_per_panel_max_a_floats runs as one row block with each B panel packed just
  // before use; a larger one goes by gemm_mc rows with the whole B block packed first. 160 rows:
  // the first k block (kc = gemm_kc) the second way, the 5-deep remainder the first way, in one
  // call. All against the same references.
  constexpr std::size_t nc = emha::gemm_nc(gemm_kc);
  check_gemm({gemm_mc, nc + 37, gemm_kc + 13, Trans::none, 0, GemmOptions{1.0f, 0.5f, nullptr}, true}, 903);
  check_gemm({29, nc + 21, gemm_kc + 5, Trans::transpose, 1}, 904);
  check_gemm({160, nc + 21, gemm_kc + 5, Trans::transpose, 1}, 905);
  check_gemm({160, nc + 3, gemm_kc + 7, Trans::none, 2, GemmOptions{0.5f, 1.0f, nullptr}, true}, 906);
  // Either side of that limit with kc = gemm_kc: limit / gemm_kc rows (one row block), one more.
  constexpr std::size_t rows = emha::gemm_per_panel_max_a_floats / gemm_kc;
  static_assert(rows * gemm_kc == emha::gemm_per_panel_max_a_floats, "a whole number of rows");
  check_gemm({rows, 53, gemm_kc, Trans::transpose}, 907);
  check_gemm({rows + 1, 53, gemm_kc, Trans::none, 0, GemmOptions{1.0f, 0.5f, nullptr}, true}, 908);
  // Small K, past the per-panel limit: blocks of gemm_nc(64) = 1024 columns, the second partial.
  static_assert(580 * 64 > emha::gemm_per_panel_max_a_floats && emha::gemm_nc(64) == 1024);
  check_gemm({580, 1040, 64, Trans::transpose}, 909);
}

// (Q_h K_h^T and P V_h with ld = d_model are test_gemm.cpp's special cases.)
TEST_CASE("gemm_f32: attention-shaped products") {
  check_gemm({64, 96, 32, Trans::transpose, 0, GemmOptions{}, true}, 1000);  // x * W^T + b
}

// Small B read in place (k * ldb <= 4096 floats, n a whole panel: 32 or 16 columns on AVX-512,
// 16 or 8 on AVX2, 8 or 4 on armv7) and the narrow tile (one vector per row, 8 rows) beside
// packed panels, with ld = d_model as in attention; either side of the in-place limit.
TEST_CASE("gemm_f32: small B in place, narrow panels, and the limit between") {
  std::uint64_t seed = 1100;
  for (std::size_t dk : {4u, 8u, 16u, 32u}) {
    for (std::size_t s : {5u, 8u, 13u, 32u, 45u}) {
      check_gemm({s, dk, s, Trans::none, 3 * dk}, seed++);                     // P V_h, ld = 4 d_k
      check_gemm({s, dk, s, Trans::none, 0, GemmOptions{0.5f, 1.0f, nullptr}, true}, seed++);
      check_gemm({s, dk + 3, 2 * s, Trans::none, 0}, seed++);                 // a partial narrow panel
      check_gemm({s, 3 * dk, s, Trans::none, 1}, seed++);                     // wide, then narrow
    }
  }
  check_gemm({20, 64, 64, Trans::none, 0}, seed++);  // k * ldb = 4096: in place
  check_gemm({20, 64, 64, Trans::none, 1}, seed++);  // 4160: packed
  check_gemm({20, 32, 128, Trans::none, 0}, seed++);
  check_gemm({20, 32, 129, Trans::none, 0}, seed++);
}

// Every row count of a narrow tile (8 rows) and of the two tiles a tail splits into, for a whole
// narrow panel (4, 8 or 16 columns: one vector on SSE2/armv7, AVX2, AVX-512) read in place (the
// product's only panel: gemm_f32's direct path) and packed (pad: ld past the in-place limit), and
// the k-blocked tiles over the same rows.
TEST_CASE("gemm_f32: narrow tiles and k-blocked tiles over every row count") {
  std::uint64_t seed = 1150;
  GemmOptions blocks{};
  blocks.k_blocks = true;
  for (std::size_t m = 1; m <= 40; ++m) {
    for (std::size_t n : {4u, 8u, 16u}) {
      check_gemm({m, n, 9, Trans::none, 0}, seed++);
      check_gemm({m, n, 40, Trans::none, 120, GemmOptions{0.5f, 1.0f, nullptr}, true}, seed++);
    }
    check_gemm({m, 40, 2 * emha::gemm_k_block + 5, Trans::transpose, 0, blocks}, seed++);
  }
}

// With SIMD, every target's multiply-add is fused (AVX2 and AVX-512 FMA, NEON vfma/fmla): one
// rounding per k step. Row [-1, 1 + 2^-12] times column [1 + 2^-11, 1 + 2^-12]: the first step
// is exact, -(1 + 2^-11); the second adds (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24, which fused leaves
// exactly 2^-24, where a rounded product (1 + 2^-11, a tie to even) leaves 0. This caught
// xsimd 8.1's AVX-512 fma, which is a multiply and an add.
// The scalar path fuses only where the FPU has an FMA (not armv6's VFPv2), and x86's SSE2 variant
// has no FMA instruction: either result there.
TEST_CASE("gemm_f32 fuses its multiply-adds on SIMD builds") {
  const bool simd = emha::simd_f32_lanes() > 1 && std::strcmp(emha::simd_isa(), "sse2") != 0;
  const float fused = std::ldexp(1.0f, -24);
  const std::size_t m = 13, n = 67, k = 2;  // every row and column position of the tiles
  const float e11 = std::ldexp(1.0f, -11), e12 = std::ldexp(1.0f, -12);
  std::vector<float> a(m * k), b(k * n), bt(n * k);  // bt: B^T [n x k] for Trans::transpose
  for (std::size_t i = 0; i < m; ++i) a[i * k] = -1.0f, a[i * k + 1] = 1.0f + e12;
  for (std::size_t j = 0; j < n; ++j) {
    b[j] = bt[j * k] = 1.0f + e11;
    b[n + j] = bt[j * k + 1] = 1.0f + e12;
  }
  for (Trans t : {Trans::none, Trans::transpose}) {
    std::vector<float> c(m * n, -1.0f);
    const bool none = t == Trans::none;
    REQUIRE(emha::gemm_f32(m, n, k, a.data(), k, none ? b.data() : bt.data(), none ? n : k, t,
                           c.data(), n, g_scratch) == Status::ok);
    for (float x : c) REQUIRE((x == fused || (!simd && x == 0.0f)));
  }
}

TEST_CASE("gemm_f32_pack_b refuses a buffer below gemm_f32_packed_b_floats' need") {
  const auto b = emha::test::uniform(40 * 33, 5);
  std::vector<float> packed(33 * 40);  // n * k: too small whenever 33 is not a multiple of NR
  const Status s = emha::gemm_f32_pack_b(33, 40, b.data(), 40, Trans::transpose, packed.data(), packed.size());
  CHECK(s == Status::size_mismatch);
  packed.resize(emha::gemm_f32_packed_b_floats(33, 40));
  CHECK(emha::gemm_f32_pack_b(33, 40, b.data(), 40, Trans::transpose, packed.data(), packed.size()) == Status::ok);
}

TEST_CASE("gemm_f32_prepacked refuses a packed buffer shorter than its panels, C untouched") {
  // n = 64 is a multiple of every build's NR, so the panels of op(B) [k x n] are exactly k * n
  // floats here; one float fewer must be refused, not read past its end.
  constexpr std::size_t m = 5, n = 64, k = 600;  // k past gemm_kc: two k blocks
  const auto a = emha::test::uniform(m * k, 1), b = emha::test::uniform(k * n, 2);
  std::vector<float> packed(emha::gemm_f32_packed_b_floats(n, k));
  REQUIRE(emha::gemm_f32_pack_b(n, k, b.data(), n, Trans::none, packed.data(), packed.size()) == Status::ok);
  std::vector<float> c(m * n, 42.0f);
  for (std::size_t floats : {std::size_t(0), std::size_t(1), k * n - 1}) {
    CHECK(emha::gemm_f32_prepacked(m, n, k, a.data(), k, packed.data(), floats, c.data(), n) ==
          Status::size_mismatch);
  }
  for (float x : c) REQUIRE(x == 42.0f);
  CHECK(emha::gemm_f32_prepacked(m, n, k, a.data(), k, packed.data(), k * n, c.data(), n) == Status::ok);
  CHECK(c[0] != 42.0f);
}

TEST_CASE("gemm_f32_scratch_bytes covers what the call takes") {
  // One panel (m * kc within gemm_per_panel_max_a_floats) or one block, either side of the
  // limit, with k past gemm_kc, and n past one block.
  constexpr std::size_t rows = emha::gemm_per_panel_max_a_floats / gemm_kc;
  const GemmCase cases[] = {{1, 1, 1},       {17, 17, 17},     {127, 127, 127}, {300, 300, 300},
                            {rows, 70, gemm_kc + 9}, {rows + 1, 70, gemm_kc + 9}, {29, 700, 64},
                            {600, 300, 64}, {100, 600, 600}, {200, 400, 341}, {200, 400, 292}};
  for (const GemmCase& t : cases) {
    CAPTURE(t.m);
    CAPTURE(t.n);
    CAPTURE(t.k);
    const std::size_t need = emha::gemm_f32_scratch_bytes(t.m, t.n, t.k);
    std::vector<std::byte> buf(need);
    const auto a = emha::test::uniform(t.m * t.k, 3), b = emha::test::uniform(t.n * t.k, 4);
    std::vector<float> c(t.m * t.n);
    // An arena of exactly `need` bytes, malloc alignment only (the bound includes the slack):
    // too small a bound makes the call return no_space.
    emha::ArenaRef arena(buf.data(), need);
    CHECK(emha::gemm_f32(t.m, t.n, t.k, a.data(), t.k, b.data(), t.k, Trans::transpose, c.data(), t.n,
                         arena) == Status::ok);
    CHECK(need <= emha::gemm_f32_scratch_bytes(600, 600, 600));  // the suite's arena covers all
  }
  // Per panel the scratch is one kc x NR panel, whatever n is.
  CHECK(emha::gemm_f32_scratch_bytes(32, 4096, 64) == emha::gemm_max_nr * 64 * sizeof(float) + 64);
}

TEST_CASE("gemm_f32: k summed in blocks (GemmOptions::k_blocks), over every tail") {
  std::uint64_t seed = 1200;
  GemmOptions blocks{};
  blocks.k_blocks = true;
  GemmOptions blocks_beta{0.5f, 1.0f, nullptr};
  blocks_beta.k_blocks = true;
  for (std::size_t s : emha::test::tail_sizes) {
    for (Trans tr : {Trans::none, Trans::transpose}) {
      check_gemm({7, 33, s, tr, 0, blocks}, seed++);
      check_gemm({13, s, 2 * emha::gemm_k_block + 3, tr, 1, blocks_beta, true}, seed++);
    }
  }
  check_gemm({97, 70, gemm_kc + 44, Trans::transpose, 0, blocks, true}, seed++);  // two kc blocks
}

// One row of A against pre-packed B (a decode step's projection): gemm_f32_prepacked takes the
// GEMV path (whole groups of gemm_gemv_panels panels, then tiles for the rest), which must give
// gemm_f32's tile bits (check_gemm compares them) with and without k blocks, bias, alpha, beta,
// across two kc blocks and widths that leave partial groups and a partial panel.
TEST_CASE("gemm_f32_prepacked: one row (the GEMV path) equals the tile path bit for bit") {
  std::uint64_t seed = 1300;
  GemmOptions blocks{};
  blocks.k_blocks = true;
  GemmOptions scaled{0.5f, 1.0f, nullptr};
  GemmOptions scaled_blocks = scaled;
  scaled_blocks.k_blocks = true;
  for (std::size_t n : {std::size_t(64), std::size_t(128), std::size_t(129), std::size_t(200), std::size_t(520)})
    for (std::size_t k : {std::size_t(1), std::size_t(17), std::size_t(40), gemm_kc + 9})
      for (const GemmOptions& o : {GemmOptions{}, blocks, scaled, scaled_blocks}) {
        check_gemm({1, n, k, Trans::transpose, 0, o, true}, seed++);
        check_gemm({1, n, k, Trans::none, 3, o, false}, seed++);
      }
}

// Why k_blocks exists: with positive terms a chain's partial sums grow with k and so does each
// FMA's rounding; blocks keep them small. Over 64 x 64 outputs of length 512 (uniform [0, 1]
// inputs), the RMS error against float64 drops ~4x (random-walk estimate); asserted: at least 2x.
TEST_CASE("gemm_f32: k_blocks cuts the error of long sums") {
  const std::size_t m = 64, n = 64, k = 512;
  auto a = emha::test::uniform(m * k, 77), b = emha::test::uniform(k * n, 78);
  for (float& x : a) x = std::fabs(x);
  for (float& x : b) x = std::fabs(x);
  std::vector<float> c64(m * n, 0.0f);
  emha::gemm_f32_ref<double>(m, n, k, a.data(), k, b.data(), n, Trans::none, c64.data(), n);
  double rms[2] = {0, 0};
  for (bool blocked : {false, true}) {
    GemmOptions o{};
    o.k_blocks = blocked;
    std::vector<float> c(m * n, 0.0f);
    REQUIRE(emha::gemm_f32(m, n, k, a.data(), k, b.data(), n, Trans::none, c.data(), n, g_scratch, o) ==
            Status::ok);
    double sum = 0;
    for (std::size_t i = 0; i < c.size(); ++i) sum += (double(c[i]) - double(c64[i])) * (double(c[i]) - double(c64[i]));
    rms[blocked] = std::sqrt(sum / double(c.size()));
  }
  INFO("RMS error vs float64: one chain " << rms[0] << ", blocks of " << emha::gemm_k_block << " " << rms[1]);
  CHECK(rms[1] * 2 < rms[0]);
}

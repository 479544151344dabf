// SPDX-License-Identifier: Apache-2.0
#pragma once
// One gemm_w8a32 case against its scalar reference and float64 (gemm_w8a32_ref<double>: float64
// of F.linear(x, wd, b) with wd = w.float() * scale[:, None] in float32), for the shared test
// (test_gemm_w8a32.cpp) and the host's larger cases (test_gemm_w8a32_host.cpp);
// gemm_w8a32_prepacked bit for bit as it.
//
// Tolerance: gemm_check.hpp's bound on the dequantized weights wd_p (exact inputs to the float
// sum: both sides round float(q) * scale the same way):
//   |c - c_exact| <= (k + 4) * u * (|alpha| sum_p |a_p wd_p| + |bias_j| + |beta c_j|).

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "emha/kernels/gemm_w8a32.hpp"
#include "emha/kernels/gemm_w8a32_ref.hpp"
#include "support/numeric.hpp"
#include "support/unit.hpp"

namespace emha::test {

struct W8Case {
  std::size_t m, n, k;
  std::size_t pad = 0;  // extra columns in every leading dimension
  GemmOptions opt{};
  bool with_bias = false;
};

constexpr std::size_t w8_lda(const W8Case& c) { return c.k + c.pad; }
constexpr std::size_t w8_ldc(const W8Case& c) { return c.n + c.pad; }

// a [m x lda], w [n x lda], scale and bias [n], c0 c c_ref c64 [m x ldc], and an arena of at
// least w8_check_arena_bytes(case): gemm_w8a32's scratch, then (released by then) the packed W
// and the pre-packed call's C.
struct W8Buffers {
  float* a;
  std::int8_t* w;
  float *scale, *bias, *c0, *c, *c_ref, *c64;
  ArenaRef* scratch;
};

constexpr std::size_t w8_check_arena_bytes(const W8Case& t) {
  const std::size_t scratch = gemm_w8a32_scratch_bytes(t.m, t.n, t.k);
  const std::size_t prepacked = gemm_w8a32_packed_b_bytes(t.n, t.k) + t.m * w8_ldc(t) * sizeof(float) + 128;
  return scratch > prepacked ? scratch : prepacked;
}

// Weights in [-127, 127], both ends present; scales spanning 2^-20 .. 2^12 (a channel's amax/127
// over very different channels), each a different magnitude from its neighbours.
inline void fill_w8(std::int8_t* w, std::size_t count, float* scale, std::size_t n, std::uint64_t seed) {
  fill_uniform(scale, n, seed + 7, 0.5f, 1.0f);
  constexpr int exponents[] = {-20, 0, 12, -7, 3, -1};
  for (std::size_t j = 0; j < n; ++j) scale[j] = std::ldexp(scale[j], exponents[j % 6]);
  fill_int8(w, count, seed);
}

inline void check_w8a32(const W8Case& t, std::uint64_t seed, const W8Buffers& buf) {
  const std::size_t lda = w8_lda(t), ldw = w8_lda(t), ldc = w8_ldc(t);
  fill_uniform(buf.a, t.m * lda, seed);
  fill_w8(buf.w, t.n * ldw, buf.scale, t.n, seed + 1);
  fill_uniform(buf.bias, t.n, seed + 2);
  fill_uniform(buf.c0, t.m * ldc, seed + 3);
  const std::size_t nc = t.m * ldc;
  for (std::size_t i = 0; i < nc; ++i) buf.c[i] = buf.c_ref[i] = buf.c64[i] = buf.c0[i];
  GemmOptions opt = t.opt;
  if (t.with_bias) opt.bias = buf.bias;
  EMHA_INFO("m=" << t.m << " n=" << t.n << " k=" << t.k << " pad=" << t.pad << " alpha=" << opt.alpha
                 << " beta=" << opt.beta << " bias=" << int(t.with_bias) << " k_blocks=" << int(opt.k_blocks));

  EMHA_CHECK(gemm_w8a32(t.m, t.n, t.k, buf.a, lda, buf.w, ldw, buf.scale, buf.c, ldc, *buf.scratch, opt) == Status::ok);
  EMHA_CHECK(buf.scratch->used() == 0);  // scratch released
  gemm_w8a32_ref(t.m, t.n, t.k, buf.a, lda, buf.w, ldw, buf.scale, buf.c_ref, ldc, opt);
  gemm_w8a32_ref<double>(t.m, t.n, t.k, buf.a, lda, buf.w, ldw, buf.scale, buf.c64, ldc, opt);

  // Pre-packed: the same panels summed the same way, so the same bits. From the released arena.
  const ArenaRef::Mark mark = buf.scratch->mark();
  const std::size_t packed_bytes = gemm_w8a32_packed_b_bytes(t.n, t.k);
  std::int8_t* packed = nullptr;
  float* c_pre = nullptr;
  EMHA_CHECK(buf.scratch->allocate(packed_bytes, packed, 64) == Status::ok);
  EMHA_CHECK(buf.scratch->allocate(nc ? nc : 1, c_pre, 64) == Status::ok);
  std::size_t bad = 0;
  if (packed && c_pre) {
    for (std::size_t i = 0; i < nc; ++i) c_pre[i] = buf.c0[i];
    EMHA_CHECK(gemm_w8a32_pack_b(t.n, t.k, buf.w, ldw, buf.scale, packed, packed_bytes) == Status::ok);
    EMHA_CHECK(gemm_w8a32_prepacked(t.m, t.n, t.k, buf.a, lda, packed, packed_bytes, c_pre, ldc, opt) == Status::ok);
    for (std::size_t i = 0; i < nc; ++i) bad += !(c_pre[i] == buf.c[i] || (std::isnan(buf.c[i]) && std::isnan(c_pre[i])));
  }
  buf.scratch->release(mark);
  EMHA_CHECK_MESSAGE(bad == 0, "pre-packed differs from in place in " << bad << " outputs");
  bad = 0;
  for (std::size_t i = 0; i < t.m; ++i) {
    for (std::size_t j = 0; j < ldc; ++j) {
      const std::size_t idx = i * ldc + j;
      if (j >= t.n) {  // padding between rows: never written
        bad += buf.c[idx] != buf.c0[idx];
        continue;
      }
      double mag = 0;  // sum_p |a_p wd_p|
      for (std::size_t p = 0; p < t.k; ++p)
        mag += std::fabs(double(buf.a[i * lda + p]) * double(float(buf.w[j * ldw + p]) * buf.scale[j]));
      const double scale = std::fabs(opt.alpha) * mag +
                           (opt.bias ? std::fabs(opt.bias[j]) : 0.0) + std::fabs(double(opt.beta) * buf.c0[idx]);
      const double bound = double(t.k + 4) * u32 * scale;
      bad += !(std::fabs(double(buf.c[idx]) - double(buf.c64[idx])) <= bound);
      bad += !(std::fabs(double(buf.c[idx]) - double(buf.c_ref[idx])) <= 2 * bound);
    }
  }
  EMHA_CHECK_MESSAGE(bad == 0, bad << " outputs outside the bound");
}

}  // namespace emha::test

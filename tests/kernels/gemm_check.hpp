// SPDX-License-Identifier: Apache-2.0
#pragma once
// One gemm_f32 case against its scalar reference (same float arithmetic, another summation order)
// and against float64 math, for the shared test (test_gemm.cpp: static buffers, host and firmware)
// and the host's larger cases (test_gemm_host.cpp).
//
// Tolerance (Higham, "Accuracy and Stability", 3.1): a float32 dot product of length k, in any
// order, with or without FMA, is within gamma_k * sum|a_p * b_p| of the exact value, with
// gamma_k ~ k * u. Alpha, bias and beta add three more roundings:
//   |c - c_exact| <= (k + 3) * u * (|alpha| sum_p |a_p b_p| + |bias_j| + |beta c_j|).
// The check against the float reference allows twice that (both sides carry the error).
// A dropped or doubled term is off by |a_p b_p|, far beyond this bound. The same bound holds on
// ARM: NEON FMAs round like x86 ones, and the inputs (uniform in [-1, 1]) have no subnormals for
// armv7's flush-to-zero to touch (products below 2^-126 would add at most 2^-126 each).

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "emha/kernels/gemm.hpp"
#include "emha/kernels/gemm_ref.hpp"
#include "support/numeric.hpp"
#include "support/unit.hpp"

namespace emha::test {

// The few-row products' check (gemm_f32_rows, gemm_w8a32_rows): outputs of C [m x n] (row stride
// ldc, started as c0) farther than (k + 3) u (alpha |mag| + |bias| + |beta c0|) from the float64
// truth c64 or twice that from the reference c_ref, plus every write into the gap between rows.
// mag: float64 sum of |a b| per output.
inline std::size_t rows_out_of_bound(std::size_t m, std::size_t n, std::size_t k, std::size_t ldc,
                                     const GemmOptions& o, const float* c, const float* c_ref, const float* c64,
                                     const float* c0, const float* mag) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < ldc; ++j) {
      const std::size_t idx = i * ldc + j;
      if (j >= n) {
        bad += c[idx] != c0[idx];  // the stride's gap is not written
        continue;
      }
      const double scale = std::fabs(o.alpha) * mag[idx] + (o.bias ? std::fabs(o.bias[j]) : 0.0) +
                           std::fabs(o.beta * c0[idx]);
      const double bound = double(k + 3) * u32 * scale;
      bad += std::fabs(double(c[idx]) - double(c64[idx])) > bound;
      bad += std::fabs(double(c[idx]) - double(c_ref[idx])) > 2 * bound;
    }
  return bad;
}

struct GemmCase {
  std::size_t m, n, k;
  Trans trans = Trans::none;
  std::size_t pad = 0;  // extra columns in every leading dimension
  GemmOptions opt{};
  bool with_bias = false;
};

constexpr std::size_t gemm_lda(const GemmCase& c) { return c.k + c.pad; }
constexpr std::size_t gemm_ldb(const GemmCase& c) { return (c.trans == Trans::none ? c.n : c.k) + c.pad; }
constexpr std::size_t gemm_ldc(const GemmCase& c) { return c.n + c.pad; }
constexpr std::size_t gemm_b_rows(const GemmCase& c) { return c.trans == Trans::none ? c.k : c.n; }

// Where a case runs: a [m x lda], b [b_rows x ldb], bias [n], c0 c c_ref c64 [m x ldc], and an
// arena of at least gemm_check_arena_bytes(case): gemm_f32's scratch, then (released by then)
// the pre-packed B and its C.
struct GemmBuffers {
  float *a, *b, *bias, *c0, *c, *c_ref, *c64;
  ArenaRef* scratch;
};

constexpr std::size_t gemm_check_arena_bytes(const GemmCase& t) {
  const std::size_t scratch = gemm_f32_scratch_bytes(t.m, t.n, t.k);
  const std::size_t prepacked = (gemm_f32_packed_b_floats(t.n, t.k) + t.m * gemm_ldc(t)) * sizeof(float) + 128;
  return scratch > prepacked ? scratch : prepacked;
}

// gemm_f32 within the bound of both references with the scratch released, and
// gemm_f32_prepacked (the same blocks in the same order) bit for bit as gemm_f32.
inline void check_gemm(const GemmCase& t, std::uint64_t seed, const GemmBuffers& buf) {
  const std::size_t lda = gemm_lda(t), ldb = gemm_ldb(t), ldc = gemm_ldc(t);
  fill_uniform(buf.a, t.m * lda, seed);
  fill_uniform(buf.b, gemm_b_rows(t) * ldb, seed + 1);
  fill_uniform(buf.bias, t.n, seed + 2);
  fill_uniform(buf.c0, t.m * ldc, seed + 3);
  const std::size_t nc = t.m * ldc;
  for (std::size_t i = 0; i < nc; ++i) buf.c[i] = buf.c_ref[i] = buf.c64[i] = buf.c0[i];
  GemmOptions opt = t.opt;
  if (t.with_bias) opt.bias = buf.bias;
  EMHA_INFO("m=" << t.m << " n=" << t.n << " k=" << t.k << " trans=" << int(t.trans) << " pad=" << t.pad
                 << " alpha=" << opt.alpha << " beta=" << opt.beta << " bias=" << int(t.with_bias)
                 << " k_blocks=" << int(opt.k_blocks));

  EMHA_CHECK(gemm_f32(t.m, t.n, t.k, buf.a, lda, buf.b, ldb, t.trans, buf.c, ldc, *buf.scratch, opt) == Status::ok);
  EMHA_CHECK(buf.scratch->used() == 0);  // scratch released
  gemm_f32_ref(t.m, t.n, t.k, buf.a, lda, buf.b, ldb, t.trans, buf.c_ref, ldc, opt);
  gemm_f32_ref<double>(t.m, t.n, t.k, buf.a, lda, buf.b, ldb, t.trans, buf.c64, ldc, opt);

  // Pre-packed B: the same blocks in the same order, so bit-identical to gemm_f32. The packed B
  // and its C come from the arena gemm_f32 has released.
  const ArenaRef::Mark mark = buf.scratch->mark();
  const std::size_t packed_floats = gemm_f32_packed_b_floats(t.n, t.k);
  float* packed = nullptr;
  float* c_pre = nullptr;
  EMHA_CHECK(buf.scratch->allocate(packed_floats, packed, 64) == Status::ok);
  EMHA_CHECK(buf.scratch->allocate(nc ? nc : 1, c_pre, 64) == Status::ok);
  std::size_t bad = 0;
  if (packed && c_pre) {
    for (std::size_t i = 0; i < nc; ++i) c_pre[i] = buf.c0[i];
    EMHA_CHECK(gemm_f32_pack_b(t.n, t.k, buf.b, ldb, t.trans, packed, packed_floats) == Status::ok);
    EMHA_CHECK(gemm_f32_prepacked(t.m, t.n, t.k, buf.a, lda, packed, packed_floats, c_pre, ldc, opt) == Status::ok);
    for (std::size_t i = 0; i < nc; ++i) bad += !(c_pre[i] == buf.c[i] || (std::isnan(buf.c[i]) && std::isnan(c_pre[i])));
  }
  buf.scratch->release(mark);
  for (std::size_t i = 0; i < t.m; ++i) {
    for (std::size_t j = 0; j < ldc; ++j) {
      const std::size_t idx = i * ldc + j;
      if (j >= t.n) {  // padding between rows: never written
        bad += buf.c[idx] != buf.c0[idx];
        continue;
      }
      double mag = 0;  // sum_p |a_p b_p|
      for (std::size_t p = 0; p < t.k; ++p) {
        const float bv = t.trans == Trans::none ? buf.b[p * ldb + j] : buf.b[j * ldb + p];
        mag += std::fabs(double(buf.a[i * lda + p]) * double(bv));
      }
      const double scale = std::fabs(opt.alpha) * mag + (opt.bias ? std::fabs(opt.bias[j]) : 0.0) +
                           std::fabs(double(opt.beta) * buf.c0[idx]);
      const double bound = double(t.k + 3) * u32 * scale;
      bad += !(std::fabs(double(buf.c[idx]) - double(buf.c64[idx])) <= bound);
      bad += !(std::fabs(double(buf.c[idx]) - double(buf.c_ref[idx])) <= 2 * bound);
    }
  }
  EMHA_CHECK(bad == 0);
}

}  // namespace emha::test

// SPDX-License-Identifier: Apache-2.0
// Paired A/B timing of two emha revisions in one process (bench/ab/ab.sh builds the two sides).
// This VM's slow phases last seconds and move every timing by 20-30%, so separate runs of two
// builds compare phases, not code. Here batches of A and B alternate a few milliseconds apart
// (order flipped every pair) and each pair gives one time ratio; the median ratio and its
// interquartile range are what to quote.
//   ab_main <A.so> <B.so> [--pairs N] [--batch-ms T] [--filter REGEX] [--require-equal 1]
//                         [--offset-bytes N] [--isa NAME]
// --require-equal 1: exit 1 unless both sides' outputs are bit-identical (two builds of one tree).
// --offset-bytes N: side B's GEMM operands (A, B, C) start N bytes (a multiple of 4) past a cache
// line, side A's on one, as every benchmark buffer does (support/aligned.hpp). With the same
// revision on both sides (ab.sh HEAD HEAD --offset-bytes 16), B/A is what misaligned operands
// cost (16: std::vector's malloc). MHA cases are not offset.
// --isa NAME: both sides run the kernel variant NAME (an emha::simd_isa() name, e.g. avx512)
// instead of the one their dispatch picks on this CPU.
// Exit status 2: bad arguments or a side that does not load.

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <string>
#include <vector>

#include "ab_side.h"
#include "kernels/gemm_shapes.hpp"
#include "support/random.hpp"

namespace {

struct Side {
  decltype(&ab_gemm_sizes) gemm_sizes;
  decltype(&ab_gemm_prepare) gemm_prepare;
  decltype(&ab_gemm_run) gemm_run;
  decltype(&ab_mha_count) mha_count;
  decltype(&ab_mha_config) mha_config;
  decltype(&ab_mha_run) mha_run;
  decltype(&ab_select_isa) select_isa;
};

template <class F>
void bind(void* h, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(h, name));
  if (!f) {
    std::fprintf(stderr, "%s\n", dlerror());
    std::exit(2);
  }
}

Side load(const char* path) {
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    std::fprintf(stderr, "%s\n", dlerror());
    std::exit(2);
  }
  Side s{};
  bind(h, "ab_gemm_sizes", s.gemm_sizes);
  bind(h, "ab_gemm_prepare", s.gemm_prepare);
  bind(h, "ab_gemm_run", s.gemm_run);
  bind(h, "ab_mha_count", s.mha_count);
  bind(h, "ab_select_isa", s.select_isa);
  bind(h, "ab_mha_config", s.mha_config);
  bind(h, "ab_mha_run", s.mha_run);
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::size_t(q * double(v.size() - 1) + 0.5)];
}

// How the two sides' outputs for the same inputs differ: bit for bit, and the largest
// |x - y| / (1 + |y|) (NaN if either side has a NaN where the other does not agree).
struct Agreement {
  bool identical;
  double max_diff;
};
Agreement agreement(const float* x, const float* y, std::size_t n) {
  double m = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = std::fabs(double(x[i]) - double(y[i])) / (1.0 + std::fabs(double(y[i])));
    if (std::isnan(d) || std::isnan(m)) m = NAN;
    else if (d > m) m = d;
  }
  return {std::memcmp(x, y, n * sizeof(float)) == 0, m};
}

struct Options {
  int pairs = 15;
  double batch_ms = 3.0;
  std::regex filter{".*"};
  bool require_equal = false;
  std::size_t offset_floats = 0;  // side B's GEMM operands start this far past a cache line
  const char* isa = nullptr;      // both sides pinned to this kernel variant
};

// Alternating batches of run(0, iters) and run(1, iters) (seconds per call, < 0: error); prints
// one line: both sides' median GFLOP/s and the median and IQR of the per-pair speed ratio B/A.
template <class Run>
bool compare(const std::string& name, double flop, const Options& o, Run run, Agreement agree) {
  const double probe = run(0, 1);
  if (probe < 0 || run(1, 1) < 0) {
    std::printf("%-34s error status\n", name.c_str());
    return false;
  }
  const int iters = std::max(1, int(o.batch_ms * 1e-3 / std::max(probe, 1e-9)));
  for (int i = 0; i < 3; ++i) run(i & 1, iters), run(1 - (i & 1), iters);
  std::vector<double> ga, gb, ratio;
  for (int p = 0; p < o.pairs; ++p) {
    double ta, tb;
    if (p & 1) {
      tb = run(1, iters);
      ta = run(0, iters);
    } else {
      ta = run(0, iters);
      tb = run(1, iters);
    }
    ga.push_back(flop / ta * 1e-9);
    gb.push_back(flop / tb * 1e-9);
    ratio.push_back(ta / tb);
  }
  std::printf("%-34s A %6.1f  B %6.1f GFLOP/s   B/A %.3f (IQR %.3f-%.3f)   %s %.1e\n",
              name.c_str(), median(ga), median(gb), median(ratio), quantile(ratio, 0.25),
              quantile(ratio, 0.75), agree.identical ? "same bits" : "max|A-B|", agree.max_diff);
  return agree.identical || !o.require_equal;
}

using emha_bench::GemmShape;
using emha_bench::gemm_shapes;

// A new cache-line-aligned buffer holding `off` zeros, then src.
emha_bench::Floats at_offset(const emha_bench::Floats& src, std::size_t off) {
  emha_bench::Floats v(off + src.size());
  std::copy(src.begin(), src.end(), v.begin() + std::ptrdiff_t(off));
  return v;
}

bool gemm_case(const Side (&side)[2], const GemmShape& s, int trans_b, int prepacked, const Options& o) {
  const std::string name = std::string("gemm/") + (trans_b ? "nt/" : "nn/") + std::to_string(s.m) +
                           "x" + std::to_string(s.n) + "x" + std::to_string(s.k) +
                           (prepacked ? "/prepacked" : "/call");
  if (!std::regex_search(name, o.filter)) return true;
  // Each side's operands: copies of the same inputs, side B's o.offset_floats past the line.
  const emha_bench::Floats a_in = emha_bench::uniform(s.m * s.k, 1), b_in = emha_bench::uniform(s.n * s.k, 2);
  emha_bench::Floats a[2], b[2], c[2], packed[2];
  std::vector<unsigned char> scratch[2];
  AbGemm g[2];
  for (int i = 0; i < 2; ++i) {
    const std::size_t off = i == 1 ? o.offset_floats : 0;
    a[i] = at_offset(a_in, off);
    b[i] = at_offset(b_in, off);
    c[i].assign(off + s.m * s.n, 0.0f);
    g[i] = AbGemm{s.m, s.n, s.k, trans_b, prepacked, a[i].data() + off, b[i].data() + off, c[i].data() + off};
    std::size_t scratch_bytes = 0, packed_floats = 0;
    side[i].gemm_sizes(&g[i], &scratch_bytes, &packed_floats);
    scratch[i].assign(scratch_bytes, 0);
    packed[i].assign(packed_floats, 0.0f);
    if (side[i].gemm_prepare(&g[i], packed[i].data(), packed[i].size()) != 0) {
      std::printf("%-34s packing failed on side %c\n", name.c_str(), "AB"[i]);
      return false;
    }
  }
  const auto run = [&](int i, int iters) {
    return side[i].gemm_run(&g[i], packed[i].data(), scratch[i].data(), scratch[i].size(), iters);
  };
  run(0, 1);
  run(1, 1);
  return compare(name, 2.0 * double(s.m) * double(s.n) * double(s.k), o, run,
                 agreement(g[1].c, g[0].c, s.m * s.n));
}

bool mha_case(const Side (&side)[2], int i, const Options& o) {
  std::size_t seq, d, h;
  side[0].mha_config(i, &seq, &d, &h);
  const std::string name = "mha/S:" + std::to_string(seq) + "/D:" + std::to_string(d) + "/H:" +
                           std::to_string(h);
  if (!std::regex_search(name, o.filter)) return true;
  emha_bench::Floats out[2] = {emha_bench::Floats(seq * d), emha_bench::Floats(seq * d)};
  const auto run = [&](int s, int iters) { return side[s].mha_run(i, iters, out[s].data()); };
  run(0, 1);
  run(1, 1);
  // The benchmark's FLOP count (bench/attention/mha_cases.hpp): 8 S D^2 + 4 S^2 D.
  const double flop = 8.0 * double(seq) * double(d) * double(d) + 4.0 * double(seq) * double(seq) * double(d);
  return compare(name, flop, o, run, agreement(out[1].data(), out[0].data(), out[0].size()));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: %s A.so B.so [--pairs N] [--batch-ms T] [--filter REGEX] [--require-equal 1] "
                 "[--offset-bytes N] [--isa NAME]\n",
                 argv[0]);
    return 2;
  }
  Options o;
  for (int i = 3; i < argc; i += 2) {
    if (i + 1 == argc) {
      std::fprintf(stderr, "option %s needs a value\n", argv[i]);
      return 2;
    }
    const char* v = argv[i + 1];
    if (!std::strcmp(argv[i], "--pairs")) {
      o.pairs = std::max(1, std::atoi(v));
    } else if (!std::strcmp(argv[i], "--batch-ms")) {
      o.batch_ms = std::atof(v);
    } else if (!std::strcmp(argv[i], "--require-equal")) {
      o.require_equal = std::atoi(v) != 0;
    } else if (!std::strcmp(argv[i], "--offset-bytes")) {
      const int bytes = std::atoi(v);
      if (bytes < 0 || bytes % int(sizeof(float)) != 0) {
        std::fprintf(stderr, "--offset-bytes %s: a multiple of %zu, >= 0\n", v, sizeof(float));
        return 2;
      }
      o.offset_floats = std::size_t(bytes) / sizeof(float);
    } else if (!std::strcmp(argv[i], "--isa")) {
      o.isa = v;
    } else if (!std::strcmp(argv[i], "--filter")) {
      try {
        o.filter = std::regex(v);
      } catch (const std::regex_error& e) {
        std::fprintf(stderr, "--filter %s: %s\n", v, e.what());
        return 2;
      }
    } else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  const Side side[2] = {load(argv[1]), load(argv[2])};
  for (const Side& s : side) {
    if (o.isa && s.select_isa(o.isa) != 0) {
      std::fprintf(stderr, "--isa %s: not a kernel variant that runs here\n", o.isa);
      return 2;
    }
  }
  bool ok = true;
  for (const GemmShape& s : gemm_shapes)
    for (int trans_b = 1; trans_b >= 0; --trans_b)
      for (int prepacked = 0; prepacked < 2; ++prepacked) ok = gemm_case(side, s, trans_b, prepacked, o) && ok;
  for (int i = 0; i < side[0].mha_count(); ++i) ok = mha_case(side, i, o) && ok;
  return ok ? 0 : 1;
}

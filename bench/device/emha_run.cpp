// SPDX-License-Identifier: Apache-2.0
// emha-run: the on-device benchmark of a user's own exported layer, for Linux boards
// (Raspberry Pi) and the host. Compiled against the header lib/export/emha_export.py wrote (its
// Config: sizes are compile-time constants), it loads the blob the exporter wrote beside it,
// checks the blob against that Config, checks forward() against the reference output embedded
// by the exporter (PyTorch float64), then times forward() on random inputs and, for
// self-attention, decode steps through a KvCache:
//   emha-run MODEL.bin [--seq S] [--decode T] [--reps R]      (--help says what each is)
// Prints latency (median, p90 over R calls), GFLOP/s and the arena and cache bytes; on an ARM
// build running under an emulator (qemu-user on an x86-64 host) the timings say so. Exit status:
// 0 ok, 1 the reference check failed, 2 a bad blob or call (its status is printed; for a blob of
// another Config, the first field that differs).
// Build (bench/device/emha_run.cmake): cmake -DEMHA_RUN_MODEL=model.hpp -DEMHA_RUN_NAME=model.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "blob_fields.hpp"
#include "emha/emha.hpp"
#include "run_checks.hpp"
#include EMHA_RUN_HEADER

namespace {

using Config = EMHA_RUN_NAME::Config;
using Layer = emha::MultiHeadAttention<Config>;
constexpr std::size_t D = Config::d_model;
constexpr bool self_attention = Config::kdim == D && Config::vdim == D;

struct Args {
  const char* blob = nullptr;
  std::size_t seq = Config::max_seq_q, decode = 16, reps = 200;
  bool help = false;
};

void usage() {
  std::printf(
      "usage: emha-run MODEL.bin [--seq S] [--decode T] [--reps R]\n"
      "  MODEL.bin   the blob lib/export/emha_export.py wrote with this build's header\n"
      "  --seq S     tokens per timed forward, 1..%zu (Config::max_seq_q; default %zu)\n"
      "  --decode T  decode steps timed through a KvCache after the forward (default 16)\n"
      "  --reps R    timed forward calls (default 200)\n"
      "Checks the blob against the Config and the exported reference, then times forward().\n",
      Config::max_seq_q, Config::max_seq_q);
}

bool parse(int argc, char** argv, Args& a) {
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      a.help = true;
      return true;
    } else if (std::strcmp(argv[i], "--seq") == 0 && has_value) {
      a.seq = std::strtoul(argv[++i], nullptr, 10);
    } else if (std::strcmp(argv[i], "--decode") == 0 && has_value) {
      a.decode = std::strtoul(argv[++i], nullptr, 10);
    } else if (std::strcmp(argv[i], "--reps") == 0 && has_value) {
      a.reps = std::strtoul(argv[++i], nullptr, 10);
    } else if (argv[i][0] != '-' && a.blob == nullptr) {
      a.blob = argv[i];
    } else {
      return false;
    }
  }
  return a.blob != nullptr && a.seq > 0 && a.reps > 0;
}

// An ARM build running on an x86-64 CPU: qemu-user shows the host's /proc/cpuinfo.
bool emulated() {
#if defined(__x86_64__) || defined(__i386__)
  return false;
#else
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.find("GenuineIntel") != std::string::npos || line.find("AuthenticAMD") != std::string::npos)
      return true;
  return false;
#endif
}

// The file's bytes, 64-byte aligned (the loader needs 4; 64 keeps each tensor on a cache line).
struct Blob {
  std::unique_ptr<unsigned char[]> storage;
  unsigned char* data = nullptr;
  std::size_t size = 0;
};

bool read_blob(const char* path, Blob& b) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) return false;
  b.size = static_cast<std::size_t>(f.tellg());
  b.storage.reset(new unsigned char[b.size + 64]);
  b.data = b.storage.get() + (64 - reinterpret_cast<std::uintptr_t>(b.storage.get()) % 64) % 64;
  f.seekg(0);
  return static_cast<bool>(f.read(reinterpret_cast<char*>(b.data), static_cast<std::streamsize>(b.size)));
}

std::vector<float> random_floats(std::size_t n, std::uint32_t seed) {
  std::vector<float> v(n);
  for (float& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = float(seed >> 8) / float(1u << 23) - 1.0f;  // [-1, 1)
  }
  return v;
}

bool failed(emha::Status s, const char* what) {
  if (s == emha::Status::ok) return false;
  std::printf("emha-run: %s: %s\n", what, emha::to_string(s));
  return true;
}

// forward() of batch 1 over s queries and s_kv keys: self-attention when K and V are the query.
emha::Status run(Layer& mha, std::size_t s, std::size_t s_kv, const float* q, const float* kv, float* y, bool causal) {
  emha::ForwardOptions o;
  o.masks.causal = causal;
  const emha::Span<const float> qs{q, s * D};
  const emha::Span<const float> ks = self_attention ? qs : emha::Span<const float>{kv, s_kv * Config::kdim};
  const emha::Span<const float> vs = self_attention ? qs : emha::Span<const float>{kv, s_kv * Config::vdim};
  return mha.forward({s, s_kv, 1, emha::Layout::batch_first}, qs, ks, vs, {y, s * D}, o);
}

// The exporter's reference (float64 PyTorch), within the suite's float32 budget (run_checks.hpp).
int check_reference(Layer& mha, const emha::BlobReference& ref) {
  if (ref.rows == 0) {
    std::printf("reference: none in the blob (exported without --reference-rows)\n");
    return 0;
  }
  std::vector<float> y(ref.rows * D);
  if (failed(run(mha, ref.rows, ref.rows, ref.input.data, ref.input.data, y.data(), ref.causal), "reference forward"))
    return 2;
  const emha::run::ReferenceErrors e = emha::run::reference_errors<Config>(y.data(), ref.output.data, ref.rows);
  const bool ok = e.excess <= 1.0;
  std::printf("reference: %zu rows%s: max |emha - exported| %.3g, %.3f of the bound: %s\n", ref.rows,
              ref.causal ? ", causal" : "", e.worst, e.excess, ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}

struct Timing {
  double median_us, p90_us;
};

template <class F>
Timing time_calls(std::size_t reps, F&& call) {
  std::vector<double> us(reps);
  for (std::size_t r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    call(r);
    us[r] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  }
  std::sort(us.begin(), us.end());
  return {us[reps / 2], us[std::min(reps - 1, reps * 9 / 10)]};
}

// T decode steps (one token each) after a prefill of `prefill` tokens, each step timed; `note`
// follows the timings (emulation). A template, so that the discarded branch's KvCache of a Config
// that cannot have one is never instantiated.
template <class C = Config>
int decode_steps(Layer& mha, std::size_t prefill, std::size_t steps, const char* note) {
  if constexpr (!self_attention || C::head_split != emha::HeadSplit::columns) {
    // No KvCache for cross-attention, nor for the flat head split (its view mixes positions).
    std::printf("decode: none (%s)\n", self_attention ? "the flat head split has no KvCache" : "not self-attention");
  } else {
    static emha::KvCache<C> cache;  // static: its bytes are a compile-time constant
    // The prefill leaves room for the steps (at least one token of each).
    steps = std::min(steps, cache.capacity - 1);
    prefill = std::min(prefill, cache.capacity - steps);
    if (steps == 0) return 0;
    const auto x = random_floats((prefill + steps) * D, 11);
    std::vector<float> y(prefill * D);
    emha::ForwardOptions o;
    o.masks.causal = true;
    emha::Status s = mha.forward({prefill, cache.keys(prefill), 1, emha::Layout::batch_first},
                                 {x.data(), prefill * D}, {y.data(), prefill * D}, cache, o);
    const Timing t = time_calls(steps, [&](std::size_t i) {
      const float* xi = x.data() + (prefill + i) * D;
      if (s == emha::Status::ok)
        s = mha.forward({1, cache.keys(1), 1, emha::Layout::batch_first}, {xi, D}, {y.data(), D}, cache, o);
    });
    if (failed(s, "decode step")) return 2;
    std::printf("decode: %zu steps after a %zu-token prefill: median %.1f us, p90 %.1f us%s; KvCache %zu B\n", steps,
                prefill, t.median_us, t.p90_us, note, cache.bytes);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parse(argc, argv, a)) {
    usage();
    return 2;
  }
  if (a.help) {
    usage();
    return 0;
  }
  if (a.seq > Config::max_seq_q) {
    std::printf("emha-run: --seq %zu is above this build's Config::max_seq_q %zu: export with --max-seq-q %zu "
                "(or more) and rebuild emha-run with that header\n", a.seq, Config::max_seq_q, a.seq);
    return 2;
  }
  Blob blob;
  if (!read_blob(a.blob, blob)) {
    std::printf("emha-run: cannot read %s\n", a.blob);
    return 2;
  }
  emha::MhaWeights w;
  emha::BlobReference ref;
  const emha::Status loaded = emha::load_weights<Config>({blob.data, blob.size}, w, &ref);
  if (loaded == emha::Status::config_mismatch) {
    const emha::run::FieldMismatch m = emha::run::first_mismatch<Config>(blob.data);
    if (m.field)
      std::printf("emha-run: %s was exported for another Config: %s is %g in the blob, %g in this build's header\n",
                  a.blob, m.field, m.blob, m.config);
    else
      std::printf("emha-run: %s was exported for another Config: a tensor is missing, extra or of another shape\n",
                  a.blob);
    return 2;
  }
  if (loaded == emha::Status::weight_type_mismatch) {
    const std::uint32_t in_blob = emha::run::blob_weight_type(blob.data);
    std::printf("emha-run: %s holds %s weights, this build's header %s weights: export the header and the blob "
                "with the same --weights\n",
                a.blob, emha::run::weight_type_name(in_blob),
                emha::run::weight_type_name(std::uint32_t(Config::weight_type)));
    return 2;
  }
  if (failed(loaded, a.blob)) return 2;
  if constexpr (Config::weight_type == emha::WeightType::int8) {
    const std::size_t q = w.in_proj_weight_int8.size + w.q_proj_weight_int8.size + w.k_proj_weight_int8.size +
                          w.v_proj_weight_int8.size + w.out_proj_weight_int8.size;
    const std::size_t scales = w.in_proj_weight_scale.size + w.q_proj_weight_scale.size + w.k_proj_weight_scale.size +
                               w.v_proj_weight_scale.size + w.out_proj_weight_scale.size;
    std::printf("emha-run: %s: int8 weights %zu B + scales %zu B (float32: %zu B)\n", a.blob, q,
                scales * sizeof(float), q * sizeof(float));
  }
  static Layer mha;  // static: with its arena, too large for a thread's stack
  if (failed(mha.set_weights(w), "set_weights")) return 2;
  std::printf("emha-run: %s, d_model %zu, heads %zu, kv_heads %zu, ISA %s; blob %zu B, arena %zu B, packed weights %zu B\n",
              a.blob, D, Config::heads, Config::kv_heads, emha::simd_isa(), blob.size, Layer::arena_bytes,
              Layer::packed_weight_bytes);
  const int checked = check_reference(mha, ref);
  if (checked != 0) return checked;

  const std::size_t s_kv = self_attention ? a.seq : Config::max_seq_kv;
  const auto q = random_floats(a.seq * D, 7), kv = random_floats(s_kv * std::max(Config::kdim, Config::vdim), 9);
  std::vector<float> y(a.seq * D);
  emha::Status s = emha::Status::ok;
  const Timing t = time_calls(a.reps, [&](std::size_t) {
    if (s == emha::Status::ok) s = run(mha, a.seq, s_kv, q.data(), kv.data(), y.data(), ref.causal);
  });
  if (failed(s, "forward")) return 2;
  const char* note = emulated() ? " (emulated: qemu-user on an x86-64 host, not the board's time)" : "";
  std::printf("forward: S_q %zu, S_kv %zu, batch 1: median %.1f us, p90 %.1f us, %.2f GFLOP/s (%zu calls)%s\n", a.seq,
              s_kv, t.median_us, t.p90_us, emha::run::forward_flops<Config>(a.seq, s_kv) / t.median_us * 1e-3, a.reps,
              note);
  return decode_steps(mha, a.seq, a.decode, note);
}

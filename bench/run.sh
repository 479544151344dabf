#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# README command 1: installs dependencies, builds Release, then runs
#   1. the attention benchmark (emha MultiHeadAttention vs Eigen) and its summary table,
#   2. the GEMM kernel benchmark (emha vs OpenBLAS, Eigen, oneDNN's matmul and XNNPACK's
#      fully-connected operator, those installed; short runs, summary table with a <peer>/emha
#      column each), with OpenBLAS and oneDNN on the instruction set emha runs, and on an AVX-512
#      CPU once more on the attention shapes with all three on the other one (AVX-512 or AVX2),
#   3. the PyTorch comparison, if /usr/bin/python3 can import torch,
#   4. a decode step through the KvCache (bench/attention/bench_decode.cpp) against a read loop
#      over its bytes, and PyTorch's step beside it (bench/torch_decode.py) if torch imports,
#   5. the thread pool: its scaling over 1 .. 2 x CPUs workers and its bars beside a busy and a
#      bursty neighbour, each met or missed (bench/threads/worker_table.sh),
#   6. a plot of it all (GFLOP/s per configuration, the FMA peak lines) to bench.png beside the
#      JSON files.
# Every benchmark binary measures the FMA peak of each instruction set the CPU has and reports
# "% of peak" of emha's own and "% best" of the machine's best. Takes a few minutes. Stops with a
# non-zero status at the first failure of emha's own. Every peer is optional (OpenBLAS, Eigen,
# oneDNN, XNNPACK, PyTorch, matplotlib): one that is missing or broken is named with the reason
# on one line ("oneDNN: skipped (...)") and the rest runs without it.
#   bash bench/run.sh [--short]   --short: one repetition of each benchmark, shorter runs, the
#                                 same tables (the test suite runs it so; its numbers are rough)
#   EMHA_BUILD_ROOT         where build trees go (default: build/); this one is bench-release
#   EMHA_BENCH_BUILD        the build tree to use instead (an existing one keeps its settings:
#                           the test suite passes its native Release tree)
#   EMHA_JOBS               parallel build jobs (default: nproc)
#   EMHA_BENCH_REPETITIONS  repetitions per MHA benchmark, medians reported (default: 20; the
#                           GEMM benchmark runs 9, the PyTorch comparison 10)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=${EMHA_BUILD_ROOT:-$root/build}
jobs=${EMHA_JOBS:-$(nproc)}
short=0
[ "${1:-}" = --short ] && short=1
reps=${EMHA_BENCH_REPETITIONS:-20}
gemm_reps=9 torch_reps=10 decode_reps=5 min_mha=0.05 min_gemm=0.03 min_torch=0.1 min_decode=0.1
if [ $short -eq 1 ]; then
  reps=1 gemm_reps=1 torch_reps=1 decode_reps=1 min_mha=0.01 min_gemm=0.01 min_torch=0.01 min_decode=0.01
  export EMHA_WORKER_BLOCKS=5
fi
build=${EMHA_BENCH_BUILD:-$out/bench-release}
mkdir -p "$out"

bash .ci/install-deps --with-torch

step() { printf '\n==== %s ====\n' "$*"; }

step "configure and build (Release) in $build"
configure=(-DCMAKE_BUILD_TYPE=Release -DEMHA_BUILD_BENCH=ON)
[ -f "$build/CMakeCache.txt" ] || configure+=(-DEMHA_BUILD_TESTS=OFF)
mkdir -p "$build"
if ! cmake -S "$root" -B "$build" "${configure[@]}" >"$build/configure.log" 2>&1; then
  cat "$build/configure.log"
  exit 1
fi
# One line per peer: found, or skipped and why (bench/CMakeLists.txt probes each on its own).
sed -n 's/^-- emha bench: peer \(.*\)/\1/p' "$build/configure.log"
cmake --build "$build" -j "$jobs" --target emha_bench_mha emha_bench_gemm emha_bench_softmax \
  emha_bench_decode emha_worker_scaling

# Repetitions in random order, so that a noisy neighbour hits every implementation alike;
# medians are what the summaries report. Many short repetitions rather than a few long ones:
# on this shared VM slow phases last seconds, and a median of many is less often caught by one.
common=(--benchmark_repetitions="$reps" --benchmark_enable_random_interleaving=true
        --benchmark_report_aggregates_only=true)

step "MultiHeadAttention::forward vs Eigen (bench/attention/bench_mha.cpp)"
"$build/bench/emha_bench_mha" "${common[@]}" --benchmark_min_time=$min_mha \
  --benchmark_out="$build/bench_mha.json" --benchmark_out_format=json

# Same instruction set on both sides. emha picks its variant from CPUID (AVX-512 where it is
# full width: Intel, AMD Zen 5; AVX2+FMA on Zen 4 and without AVX-512); OpenBLAS 0.3.21 picks
# AVX-512 kernels on the CPUs it knows (Zen 4 as Cooperlake) and falls back to Haswell's AVX2
# ones on those it does not (Zen 5). Where the two differ, OpenBLAS's core for emha's ISA is
# forced (OPENBLAS_CORETYPE, read when the library loads) and the run says so. oneDNN is held to
# emha's instruction set by the binary itself (dnnl_set_max_cpu_isa, support/peers.cpp);
# XNNPACK's 2022 snapshot has no such switch and runs its own choice (its "peers" entry says so).
emha_isa=$("$build/bench/emha_bench_gemm" --benchmark_filter='^$' 2>&1 | sed -n 's/^emha kernels: //p')
openblas_core=$("$build/bench/emha_bench_gemm" --benchmark_filter='^$' 2>&1 | sed -n 's/.*OpenBLAS.*(core \([A-Za-z0-9]*\).*/\1/p')
# openblas_env ISA: the OPENBLAS_CORETYPE assignment that puts OpenBLAS on ISA's kernels, if any.
openblas_env() {
  local avx512_core=0
  [[ $openblas_core =~ ^(SkylakeX|Cooperlake|SapphireRapids)$ ]] && avx512_core=1
  if [ "$1" = avx512 ] && [ $avx512_core -eq 0 ]; then echo OPENBLAS_CORETYPE=SkylakeX; fi
  if [ "$1" != avx512 ] && [ $avx512_core -eq 1 ]; then echo OPENBLAS_CORETYPE=Haswell; fi
}
env1=$(openblas_env "$emha_isa")
step "gemm_f32 vs OpenBLAS, Eigen, oneDNN and XNNPACK, emha and oneDNN on $emha_isa, OpenBLAS ${env1:-on its own choice, core $openblas_core} (JSON in $build/bench_gemm.json)"
# JSON on stdout goes to the file; the peak and the summary table come on stderr.
env $env1 "$build/bench/emha_bench_gemm" --benchmark_repetitions=$gemm_reps \
  --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true \
  --benchmark_min_time=$min_gemm --benchmark_format=json >"$build/bench_gemm.json"

# On an AVX-512 CPU, the attention shapes once more with both on the other instruction set.
if grep -qw avx512f /proc/cpuinfo; then
  other=$([ "$emha_isa" = avx512 ] && echo avx2 || echo avx512)
  env2=$(openblas_env "$other")
  step "gemm_f32 with emha and oneDNN on $other (--emha_isa), OpenBLAS ${env2:-on its own choice, core $openblas_core}, attention shapes"
  env $env2 "$build/bench/emha_bench_gemm" --emha_isa="$other" --benchmark_repetitions=$gemm_reps \
    --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true \
    --benchmark_min_time=$min_gemm --benchmark_format=json \
    --benchmark_filter='fma_peak|/(64x384x128|128x768x256|256x1536x512|128x128x32|256x256x64|128x32x128)/' \
    >"$build/bench_gemm_$other.json"
fi

step "PyTorch nn.MultiheadAttention (bench/torch_mha.py)"
torch_json=()
if why=$(/usr/bin/python3 -c "import torch" 2>&1); then
  /usr/bin/python3 bench/torch_mha.py "$build/bench/emha_bench_mha" --repetitions $torch_reps \
    --min-time $min_torch --json "$build/torch_mha.json"
  torch_json=(--torch "$build/torch_mha.json")
else
  echo "PyTorch: skipped (/usr/bin/python3 cannot import torch: $(tail -n 1 <<<"$why"))"
fi

step "a decode step through the KvCache (bench/attention/bench_decode.cpp, bench/torch_decode.py)"
if [ ${#torch_json[@]} -gt 0 ]; then
  /usr/bin/python3 bench/torch_decode.py "$build/bench/emha_bench_decode" --repetitions $decode_reps \
    --min-time $min_decode
else
  "$build/bench/emha_bench_decode" --benchmark_filter='^decode/' --benchmark_repetitions=$decode_reps \
    --benchmark_report_aggregates_only=true --benchmark_min_time=$min_decode --benchmark_format=json \
    >"$build/bench_decode.json"
fi

step "threads: the pool's scaling and its bars under load (bench/threads/worker_table.sh)"
bash bench/threads/worker_table.sh "$build/bench/emha_worker_scaling"

step "plot (bench/plot.py)"
if why=$(/usr/bin/python3 -c "import matplotlib" 2>&1); then
  /usr/bin/python3 bench/plot.py --mha "$build/bench_mha.json" --gemm "$build/bench_gemm.json" \
    "${torch_json[@]}" --out "$build/bench.png"
else
  echo "matplotlib: skipped (/usr/bin/python3 cannot import matplotlib: $(tail -n 1 <<<"$why"))"
fi

step "benchmarks done"

#!/usr/bin/env bash
# README command 1: installs dependencies, builds Release, then runs
#   1. the attention benchmark (emha MultiHeadAttention vs Eigen) and its summary table,
#   2. the GEMM kernel benchmark (emha vs OpenBLAS vs Eigen; short runs, summary table), and on
#      an AVX-512 CPU once more on the attention shapes with OpenBLAS held to its AVX2 kernels,
#   3. the PyTorch comparison, if /usr/bin/python3 can import torch.
# Takes a few minutes. Stops with a non-zero status at the first failure.
#   EMHA_BUILD_ROOT         where build trees go (default: build/); this one is bench-release
#   EMHA_JOBS               parallel build jobs (default: nproc)
#   EMHA_BENCH_REPETITIONS  repetitions per MHA benchmark, medians reported (default: 20; the
#                           GEMM benchmark runs 9, the PyTorch comparison 10)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=${EMHA_BUILD_ROOT:-$root/build}
jobs=${EMHA_JOBS:-$(nproc)}
reps=${EMHA_BENCH_REPETITIONS:-20}
build=$out/bench-release
mkdir -p "$out"

bash .ci/install-deps --with-torch

step() { printf '\n==== %s ====\n' "$*"; }

step "configure and build (Release) in $build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DEMHA_BUILD_TESTS=OFF \
  -DEMHA_BUILD_BENCH=ON >/dev/null
cmake --build "$build" -j "$jobs" --target emha_bench_mha emha_bench_gemm emha_bench_softmax

# Repetitions in random order, so that a noisy neighbour hits every implementation alike;
# medians are what the summaries report. Many short repetitions rather than a few long ones:
# on this shared VM slow phases last seconds, and a median of many is less often caught by one.
common=(--benchmark_repetitions="$reps" --benchmark_enable_random_interleaving=true
        --benchmark_report_aggregates_only=true)

step "MultiHeadAttention::forward vs Eigen (bench/attention/bench_mha.cpp)"
"$build/bench/emha_bench_mha" "${common[@]}" --benchmark_min_time=0.05 \
  --benchmark_out="$build/bench_mha.json" --benchmark_out_format=json

step "gemm_f32 vs OpenBLAS and Eigen (bench/kernels/bench_gemm.cpp; JSON in $build/bench_gemm.json)"
# JSON on stdout goes to the file; the peak and the summary table come on stderr.
"$build/bench/emha_bench_gemm" --benchmark_repetitions=9 --benchmark_enable_random_interleaving=true \
  --benchmark_report_aggregates_only=true --benchmark_min_time=0.03 \
  --benchmark_format=json >"$build/bench_gemm.json"

# On an AVX-512 CPU, OpenBLAS runs its AVX-512 kernels (core SkylakeX or Cooperlake) while emha
# runs its AVX2 build: the pass above is a cross-ISA comparison. This one forces OpenBLAS's AVX2
# kernels (OPENBLAS_CORETYPE=Haswell, read when the library loads), the same instruction set as
# emha's build, on the attention shapes; emha and Eigen are timed again beside it.
if grep -qw avx512f /proc/cpuinfo; then
  step "gemm_f32 vs OpenBLAS's AVX2 kernels (OPENBLAS_CORETYPE=Haswell), attention shapes"
  OPENBLAS_CORETYPE=Haswell "$build/bench/emha_bench_gemm" --benchmark_repetitions=9 \
    --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true \
    --benchmark_min_time=0.03 --benchmark_format=json \
    --benchmark_filter='fma_peak|/(64x384x128|128x768x256|256x1536x512|128x128x32|256x256x64|128x32x128)/' \
    >"$build/bench_gemm_openblas_avx2.json"
fi

step "PyTorch nn.MultiheadAttention (bench/torch_mha.py)"
if /usr/bin/python3 -c "import torch" >/dev/null 2>&1; then
  /usr/bin/python3 bench/torch_mha.py "$build/bench/emha_bench_mha" --repetitions 10 --min-time 0.1
else
  echo "skipped: /usr/bin/python3 cannot import torch (install it with: apt-get install python3-torch)"
fi

step "benchmarks done"

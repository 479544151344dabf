#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The whole test suite (README command 2; .ci/run runs it). Installs dependencies, then builds
# and runs every configuration; stops with a non-zero status at the first failure.
#   EMHA_BUILD_ROOT  where build trees go (default: build/)
#   EMHA_JOBS        parallel build jobs (default: nproc)
#   EMHA_FUZZ_SECONDS  how long the fuzz target runs (default: 90)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=${EMHA_BUILD_ROOT:-$root/build}
jobs=${EMHA_JOBS:-$(nproc)}
mkdir -p "$out"

# Every peer of the benchmarks too: the main job's short run below proves README command 1.
bash .ci/install-deps --with-torch

# One compiler cache for every build tree of the run (CMake reads the launcher from the
# environment when it configures a tree): an object two trees compile alike is compiled once,
# e.g. the README flow's library and native-release's, its Pi library and the aarch64 suite's,
# the test objects of the native trees (only test_simd.cpp differs between them). Paths under
# the checkout are hashed relative to it. Depend mode: no preprocessor run on a miss.
export CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_C_COMPILER_LAUNCHER=ccache
export CCACHE_DIR=${CCACHE_DIR:-$out/ccache} CCACHE_BASEDIR=$root CCACHE_DEPEND=1
ccache --zero-stats >/dev/null

# step NAME: a stage's header; the previous stage's seconds go to the table printed at the end.
stages=()
stage_name="" stage_start=$SECONDS
stage_done() {
  [ -n "$stage_name" ] && stages+=("$(printf '%5ds  %s' $((SECONDS - stage_start)) "$stage_name")")
  stage_name="" stage_start=$SECONDS
}
step() {
  stage_done
  stage_name=$1
  printf '\n==== %s ==== (%s)\n' "$*" "$(date -u +%H:%M:%S)"
}
trap 'stage_done; [ ${#stages[@]} -gt 0 ] && printf "\nseconds per stage:\n" && printf "%s\n" "${stages[@]}"' EXIT

step "sources: SPDX lines, no lab notes in lib/ and README.md, no issue references, lib/ comments name existing files"
bash tests/check_sources.sh

# configure_build_test <name> [cmake args...]: a build tree under $out/<name>, all of ctest.
configure_build_test() {
  local name=$1; shift
  step "$name"
  cmake -S "$root" -B "$out/$name" -DEMHA_BUILD_BENCH=OFF "$@" >/dev/null
  cmake --build "$out/$name" -j "$jobs"
  (cd "$out/$name" && ctest --output-on-failure -j "$jobs")
}

# The native Release tree builds the benchmarks too: the main job's short run uses it.
configure_build_test native-release -DCMAKE_BUILD_TYPE=Release -DEMHA_BUILD_BENCH=ON
step "README command 1, short: bash bench/run.sh --short in native-release (every peer installed)"
EMHA_BENCH_BUILD="$out/native-release" EMHA_BUILD_ROOT="$out" bash bench/run.sh --short
# ASan + UBSan at -O1: every check of -O0 (Debug), at a tenth of its run time; -O0's xsimd calls
# are not inlined, and the suite ran for ten minutes per kernel variant there.
configure_build_test native-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g -fno-omit-frame-pointer" \
  -DEMHA_SANITIZE=ON
step "native-tsan: ThreadSanitizer (clang 14) on the attention and thread tests, forward() split over 2 workers"
# One kernel variant (-march=native): what TSan checks is the threads' use of memory, the same in
# every variant.
CC=clang CXX=clang++ cmake -S "$root" -B "$out/native-tsan" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DEMHA_BUILD_BENCH=OFF -DEMHA_X86_ISA=native -DCMAKE_CXX_FLAGS=-fsanitize=thread \
  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread >/dev/null
cmake --build "$out/native-tsan" -j "$jobs" --target emha_tests emha_pool_properties
TSAN_OPTIONS=halt_on_error=1 "$out/native-tsan/tests/emha_tests" \
  --test-case='*thread*,parallel_for*,MultiHeadAttention*,*fused*,*causal*,*mask*'
for workers in 2 4; do  # the pool itself: a parked worker, every item once, the bits
  EMHA_POOL_WORKERS=$workers TSAN_OPTIONS=halt_on_error=1 "$out/native-tsan/tests/emha_pool_properties"
done
configure_build_test native-scalar -DCMAKE_BUILD_TYPE=Release -DEMHA_SIMD=OFF
# The AVX-512 kernels (6 x 32 tiles, EMHA_X86_ISA=native) run only where the CPU has them.
# -march=native with AVX512_VNNI names the variant avx512vnni (lib/src/simd_arch.hpp).
if grep -qw avx512bw /proc/cpuinfo; then
  native_isa=avx512
  if grep -qw avx512_vnni /proc/cpuinfo; then native_isa=avx512vnni; fi
  configure_build_test native-avx512 -DCMAKE_BUILD_TYPE=Release -DEMHA_X86_ISA=native \
    -DEMHA_EXPECTED_ISA=$native_isa
else
  step "native-avx512: skipped, this CPU has no AVX-512BW"
fi

step "fuzz: forward, set_weights and the arena under libFuzzer + ASan + UBSan (tests/fuzz)"
bash tests/fuzz/run.sh "${EMHA_FUZZ_SECONDS:-90}" "$out"

step "install, then find_package(emha) and add_subdirectory from consumers built with -fno-exceptions -fno-rtti"
# The library's own code is compiled without exceptions and RTTI in every build above but the
# sanitizers' (lib/CMakeLists.txt); the package is native-release's.
rm -rf "$out/prefix"
cmake --install "$out/native-release" --prefix "$out/prefix" >/dev/null
/usr/bin/python3 "$out/prefix/share/emha/emha-export" --help >/dev/null  # the installed exporter runs
cmp LICENSE "$out/prefix/share/doc/emha/LICENSE"  # the package carries the license
# add_subdirectory builds the library again inside the consumer, with the consumer's flags: one
# kernel variant (EMHA_X86_ISA=avx2), as the variants are built and tested above.
for mode in package subdirectory; do
  cmake -S tests/consumer -B "$out/consumer-$mode" -DCMAKE_BUILD_TYPE=Release \
    -DCONSUMER_MODE=$mode -DCMAKE_PREFIX_PATH="$out/prefix" -DEMHA_SOURCE_DIR="$root" \
    -DEMHA_X86_ISA=avx2 -DCMAKE_CXX_FLAGS="-fno-exceptions -fno-rtti" >/dev/null
  cmake --build "$out/consumer-$mode" -j "$jobs"
  "$out/consumer-$mode/consumer"
done

step "README: from a PyTorch checkpoint to emha-run on the host, a Pi (qemu-aarch64) and a Cortex-M4 (qemu-system-arm)"
bash tests/export/readme_flow.sh

step "bench/icount/mha_callgrind.sh 32: the instruction-count script runs (its counts: bench/README.md)"
EMHA_BUILD_ROOT="$out" EMHA_ICOUNT_TREE="$out/native-release" bash bench/icount/mha_callgrind.sh 32

step "bench/icount/decode_icount.sh: aarch64 instructions per decode step, float and int8 (its counts: bench/README.md)"
EMHA_BUILD_ROOT="$out" EMHA_ICOUNT_TREE="$root/build/run-pi" bash bench/icount/decode_icount.sh

step "bench/accuracy/s8_stage_error.py: the int8 layer's error by stage (its figures: bench/README.md)"
/usr/bin/python3 bench/accuracy/s8_stage_error.py

step "bench/ab/ab.sh HEAD .: the paired A/B tool builds two sides, runs, and they agree bit for bit"
EMHA_BUILD_ROOT="$out" EMHA_AB_CMAKE_ARGS=-DEMHA_X86_ISA=native bash bench/ab/ab.sh HEAD . --pairs 1 \
  --batch-ms 1 --require-equal 1 \
  --filter 'gemm/nt/(64x64x64|256x256x64)/|mha/S:32/'

step "tests/cross.sh: the ARM half (its own seconds per stage follow its run)"
bash tests/cross.sh "$out" "$jobs"

step "all test configurations passed"
ccache --show-stats | grep -E 'Hits|Misses' || true
stage_done

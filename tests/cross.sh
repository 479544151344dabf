#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The ARM half of the test suite; tests/run.sh runs it last, after installing the packages
# (.ci/install-deps). Stops with a non-zero status at the first failure.
#   bash tests/cross.sh [out] [jobs]     build trees go to <out>/arm-* (default build/, nproc)
#   EMHA_CROSS_STAGES        which parts to run (default all: "linux bench cortex-m")
#   EMHA_CROSS_BENCH_FILTER  --benchmark_filter for the Google Benchmark smoke runs (default: the
#                            first group each binary lists, e.g. one size of emha and its peers)
#
#   Linux boards under qemu-user (toolchains/*-linux-*.cmake), Release, the whole ctest suite:
#     aarch64 (cortex-a72), armv7 + NEON (cortex-a7), armv6 without NEON (the scalar path).
#   Google Benchmark binaries (bench/) for aarch64 and armv7: built, each run once briefly.
#   Cortex-M4/M7/M55 on qemu-system-arm (toolchains/cortex-m*.cmake, tests/firmware): the test
#     firmware, the heap gate's negative links, the footprint probes, the device benchmarks, the
#     stack budget (worst case per public entry point, <= 1 KiB, checked against the firmware's
#     painted-stack measurement), then arm-none-eabi-size of the images; README.md's firmware
#     table must be what tests/firmware/footprint_table.py renders from those measurements; and
#     for M4 the installed package: tests/consumer as a firmware built from it alone.
# qemu runs about 1e8 floating-point operations per second: everything here stays small, and
# no timing printed here says anything about a real board.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=${1:-$root/build}
jobs=${2:-$(nproc)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
toolchains=$root/toolchains
wanted=" ${EMHA_CROSS_STAGES:-linux bench cortex-m} "
want() { [[ $wanted == *" $1 "* ]]; }

step() { printf '\n==== %s ====\n' "$*"; }

# Seconds per stage, printed at the end.
stages=()
stage_start=$SECONDS
stage_done() {
  stages+=("$(printf '%5ds  %s' $((SECONDS - stage_start)) "$1")")
  stage_start=$SECONDS
}

# linux_suite <name> <toolchain file> [cmake args...]: configure, build, all of ctest under qemu.
# Where the bench smoke runs too (aarch64, armv7), the tree builds the benchmarks as well: one
# build of the library for both.
linux_suite() {
  local name=$1 toolchain=$2
  shift 2
  step "$name: tests under qemu-user ($toolchain)"
  cmake -S "$root" -B "$out/$name" --toolchain "$toolchains/$toolchain" -DCMAKE_BUILD_TYPE=Release \
    -DEMHA_BUILD_TESTS=ON -DEMHA_BUILD_BENCH=OFF "$@" >/dev/null
  cmake --build "$out/$name" -j "$jobs"
  (cd "$out/$name" && ctest --output-on-failure -j "$jobs")
  stage_done "$name: build + ctest"
}

# smoke_one <exe> <qemu command...>: one benchmark binary on its first group of benchmarks (or on
# EMHA_CROSS_BENCH_FILTER) for a moment; fails when it lists or runs none.
smoke_one() {
  local exe=$1 filter list first results
  shift
  filter=${EMHA_CROSS_BENCH_FILTER:-}
  if [ -z "$filter" ]; then
    # The first group of the list (one size, emha and its peers): names have no blanks, the
    # binaries' own preamble lines do; a group is a name with a '/' (fma_peak alone is not one).
    list=$("$@" "$exe" --benchmark_list_tests) || { echo "$exe --benchmark_list_tests failed" >&2; return 1; }
    first=$(grep -m 1 -E '^[^[:space:]]+/emha$' <<<"$list" || grep -m 1 -E '^[^[:space:]]+/[^[:space:]]+$' <<<"$list" ||
            true)
    if [ -z "$first" ]; then
      echo "no benchmark listed by $exe" >&2
      return 1
    fi
    filter="^$(printf '%s' "${first%/*}/" | sed 's/[][\.*^$+?(){}|]/\\&/g')"
  fi
  echo "-- ${exe#"$out"/} --benchmark_filter='$filter'"
  # A filter that matches nothing (or does not compile) still exits 0: require result lines.
  results=$("$@" "$exe" --benchmark_filter="$filter" --benchmark_min_time=0.01) || { echo "$exe failed" >&2; return 1; }
  printf '%s\n' "$results"
  if ! grep -qE '[0-9.]+ (ns|us|ms|s) +[0-9.]+ (ns|us|ms|s) +[0-9]+' <<<"$results"; then
    echo "$exe ran no benchmark" >&2
    return 1
  fi
}

# bench_smoke <name> <toolchain file> <qemu command...>: every Google Benchmark binary of bench/
# through smoke_one, $jobs at a time (each is one emulated thread); their outputs in name order.
# <name> is the linux_suite's tree of that toolchain (configured the same way: nothing rebuilt).
bench_smoke() {
  local name=$1 toolchain=$2
  shift 2
  local qemu=("$@")
  step "$name: Google Benchmark smoke run under qemu-user ($toolchain; its timings mean nothing)"
  cmake -S "$root" -B "$out/$name" --toolchain "$toolchains/$toolchain" -DCMAKE_BUILD_TYPE=Release \
    -DEMHA_BUILD_TESTS=ON -DEMHA_BUILD_BENCH=ON >/dev/null
  cmake --build "$out/$name" -j "$jobs"
  local exes=() exe i logs=$out/$name/smoke failed=0
  while IFS= read -r exe; do
    if [ "$(head -c 4 "$exe" | od -An -c | tr -d ' ')" = '177ELF' ]; then exes+=("$exe"); fi
  done < <(find "$out/$name/bench" -type f -name 'emha_bench_*' -perm -u+x ! -path '*/CMakeFiles/*' | sort)
  if [ ${#exes[@]} -eq 0 ]; then
    echo "no benchmark executables under $out/$name/bench" >&2
    return 1
  fi
  rm -rf "$logs" && mkdir -p "$logs"
  for i in "${!exes[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
    # Its status in a file: `wait -n` above may have collected it.
    (if smoke_one "${exes[i]}" "${qemu[@]}" >"$logs/$i.log" 2>&1; then echo 0; else echo 1; fi >"$logs/$i.rc") &
  done
  wait
  for i in "${!exes[@]}"; do
    cat "$logs/$i.log"
    [ "$(cat "$logs/$i.rc")" = 0 ] || failed=1
  done
  [ $failed = 0 ] || return 1
  stage_done "$name: build + smoke run"
}

# cortex_m <name> <toolchain file> <build type>: the firmware project, all of its ctest (qemu-system-arm).
cortex_m() {
  local name=$1 toolchain=$2 build_type=$3
  local dir=$out/$name log=$out/$name/ctest-cross.log
  step "$name: firmware under qemu-system-arm ($toolchain, $build_type)"
  cmake -S "$root/tests/firmware" -B "$dir" --toolchain "$toolchains/$toolchain" \
    -DCMAKE_BUILD_TYPE="$build_type" >/dev/null
  cmake --build "$dir" -j "$jobs"
  # Keep every test's output: show what the firmware and the benchmark print, all of it on failure.
  if ! (cd "$dir" && ctest -V -j "$jobs" >"$log" 2>&1); then
    cat "$log"
    echo "$name: ctest failed (log: $log)" >&2
    return 1
  fi
  sed -nE 's/^[0-9]+: //p' "$log" |
    grep -vE '^(Test command|Working Directory|Test timeout|\[ *[0-9]+%\]|gmake|collect2|/usr/)' || true
  grep -E 'tests passed' "$log"
  step "$name: worst-case stack of the public entry points (tests/firmware/stack_budget.py)"
  local budget
  budget=$(python3 "$root/tests/firmware/stack_budget.py" --limit 1024 --elf "$dir/emha_firmware.elf" \
    --measured-log "$log" "$dir/emha/lib/CMakeFiles/emha.dir") || { echo "$budget"; return 1; }
  grep -E 'limit|mha_forward |mha_forward_ref |mha_s8_forward |mha_s16x8_forward |gemm_f32 |softmax_f32 |MultiHeadAttention|^    |measured' <<<"$budget"
  # Each measurement also goes to $footprints, README.md's firmware table's source.
  local core=${toolchain%.cmake} fwd sw s8 s16x8
  read -r fwd sw s8 s16x8 < <(sed -nE 's/^MultiHeadAttention::forward: ([0-9]+) bytes; set_weights: ([0-9]+) bytes; full-integer forward: ([0-9]+) bytes; 16x8 forward: ([0-9]+) bytes.*/\1 \2 \3 \4/p' <<<"$budget")
  printf '%s\t%s\t%s\t%s\t%s\n' "$core" "$build_type" stack forward "$fwd" "$core" "$build_type" stack set_weights "$sw" \
    "$core" "$build_type" stack s8_forward "$s8" "$core" "$build_type" stack s16x8_forward "$s16x8" >>"$footprints"
  step "$name: image sizes (bytes; flash = text + data, RAM = data + bss, stack included)"
  arm-none-eabi-size "$dir/emha_firmware.elf" "$dir/emha_footprint_baseline.elf" \
    "$dir"/emha_footprint_{mha,decoder,t5,int8,s8,s16x8}.elf "$dir/bench-device/emha_device_bench.elf"
  local base size probe flash ram
  read -r -a base < <(arm-none-eabi-size "$dir/emha_footprint_baseline.elf" | tail -n 1)
  echo "emha in a firmware (footprint_<probe> - footprint_baseline; flash: code + constants, RAM: the" \
    "objects with their arena and cache, the port's state; tests/firmware/footprint.cpp):"
  for probe in mha decoder t5 int8 s8 s16x8; do
    read -r -a size < <(arm-none-eabi-size "$dir/emha_footprint_$probe.elf" | tail -n 1)
    flash=$((size[0] + size[1] - base[0] - base[1]))
    ram=$((size[1] + size[2] - base[1] - base[2]))
    printf '  %-8s flash %6d bytes, RAM %6d bytes\n' "$probe" "$flash" "$ram"
    printf '%s\t%s\t%s\t%s\t%s\n' "$core" "$build_type" flash "$probe" "$flash" "$core" "$build_type" ram "$probe" "$ram" \
      >>"$footprints"
  done
  stage_done "$name: build + firmware, heap gate, footprint, device bench"
}

# cortex_m_package <name> <toolchain file> <build type>: libemha.a built for the board and
# installed; tests/consumer configured with the installed toolchain file, find_package(emha) and
# emha_cortex_m_executable() from the package (start-up code, linker script, heap gate), run
# under qemu-system-arm. Nothing of the consumer's build comes from the source tree.
cortex_m_package() {
  local name=$1 toolchain=$2 build_type=$3
  local dir=$out/$name
  step "$name: installed package, a consumer firmware from it ($toolchain, $build_type)"
  rm -rf "$dir/prefix"
  cmake -S "$root" -B "$dir/lib" --toolchain "$toolchains/$toolchain" \
    -DCMAKE_BUILD_TYPE="$build_type" >/dev/null
  cmake --build "$dir/lib" -j "$jobs"
  cmake --install "$dir/lib" --prefix "$dir/prefix" >/dev/null
  # The toolchain looks for packages only under the arm-none-eabi root: name the package's path.
  cmake -S "$root/tests/consumer" -B "$dir/consumer" -DCMAKE_BUILD_TYPE="$build_type" \
    --toolchain "$dir/prefix/share/emha/toolchains/$toolchain" \
    -Demha_DIR="$dir/prefix/lib/cmake/emha" >/dev/null
  cmake --build "$dir/consumer" -j "$jobs"
  local log=$dir/ctest-consumer.log
  if ! ctest --test-dir "$dir/consumer" -V --no-tests=error >"$log" 2>&1; then
    cat "$log"
    echo "$name: the consumer firmware failed (log: $log)" >&2
    return 1
  fi
  grep -E 'consumer:|tests passed' "$log"
  stage_done "$name: install + consumer firmware from the package"
}

if want linux; then
  linux_suite arm-aarch64 aarch64-linux-gnu.cmake -DEMHA_BUILD_BENCH=ON
  linux_suite arm-armv7 armv7-linux-gnueabihf.cmake -DEMHA_BUILD_BENCH=ON
  linux_suite arm-armv6 armv6-linux-gnueabihf.cmake
fi

if want bench; then
  if [ -f bench/CMakeLists.txt ]; then
    bench_smoke arm-aarch64 aarch64-linux-gnu.cmake qemu-aarch64 -L / -cpu cortex-a72
    bench_smoke arm-armv7 armv7-linux-gnueabihf.cmake qemu-arm -L / -cpu cortex-a7
  else
    step "Google Benchmark on aarch64/armv7: SKIPPED (no bench/CMakeLists.txt yet)"
    stage_done "Google Benchmark smoke runs: skipped (no bench/CMakeLists.txt)"
  fi
fi

if want cortex-m; then
  footprints=$out/footprint.tsv  # what each cortex_m stage measured, for the README's table
  rm -f "$footprints"
  cortex_m arm-m4 cortex-m4.cmake MinSizeRel
  cortex_m arm-m7 cortex-m7.cmake Release
  cortex_m arm-m55 cortex-m55.cmake Release
  step "README.md's firmware table against these builds (tests/firmware/footprint_table.py)"
  python3 "$root/tests/firmware/footprint_table.py" "$footprints" --check "$root/README.md"
  python3 "$root/tests/firmware/footprint_table.py" "$footprints"
  cortex_m_package arm-m4-package cortex-m4.cmake MinSizeRel
fi

step "ARM configurations passed"
printf '%s\n' "${stages[@]}"

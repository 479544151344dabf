#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Executed instructions of one decode step on aarch64 under qemu-user (exact counts, not time):
# float weights and cache, int8 weights (W8A32), an int8 KvCache, and both, at (256, 4 heads,
# 2 K/V heads) over 64 cached positions (bench/icount/decode_icount.cpp). Each count is the
# difference of a run with 3 steps and one with 1, halved, so start-up and the prefill cancel.
#   bash bench/icount/decode_icount.sh [cpu=cortex-a72]
# Needs g++-aarch64-linux-gnu and qemu-user (tests/cross.sh's set-up installs both).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/trace_count.sh"
root=$(cd "$here/../.." && pwd)
cpu=${1:-cortex-a72}
build=${EMHA_BUILD_ROOT:-$root/build}/icount-decode
mkdir -p "$build"
# EMHA_ICOUNT_TREE: an existing aarch64 Release build tree of the library for this cpu to link
# (the test suite passes the README's Pi tree); else one of its own.
lib_tree=${EMHA_ICOUNT_TREE:-$build/emha}
if [ -z "${EMHA_ICOUNT_TREE:-}" ]; then
  cmake -S "$root" -B "$lib_tree" --toolchain "$root/toolchains/aarch64-linux-gnu.cmake" \
    -DEMHA_ARM_CPU="$cpu" -DCMAKE_BUILD_TYPE=Release -DEMHA_BUILD_TESTS=OFF -DEMHA_BUILD_BENCH=OFF >/dev/null
fi
grep -qx "EMHA_ARM_CPU:STRING=$cpu" "$lib_tree/CMakeCache.txt" ||
  { echo "decode_icount: $lib_tree is not built for $cpu" >&2; exit 1; }
cmake --build "$lib_tree" -j "$(nproc)" --target emha >/dev/null
aarch64-linux-gnu-g++ -O2 -std=c++17 -mcpu="$cpu" -DNDEBUG -I "$root/lib/include" "$here/decode_icount.cpp" \
  "$lib_tree/lib/libemha.a" -o "$build/decode_icount"

count() { trace_count qemu-aarch64 -L / -cpu "$cpu" "$build/decode_icount" "$@"; }  # one run
printf 'decode step, (256, 4 heads, 2 K/V heads) at 64 cached positions, aarch64 %s (qemu instruction counts)\n' "$cpu"
printf '%-22s %14s %10s\n' variant instructions "vs float"
base=0
for v in f32 w8 kv8 w8kv8; do
  # The one-step and three-step runs side by side (counts do not depend on timing).
  count "$v" 1 >"$build/$v.1" & first=$!
  count "$v" 3 >"$build/$v.3" & second=$!
  wait "$first"
  wait "$second"
  one=$(<"$build/$v.1") three=$(<"$build/$v.3")
  per=$(((three - one) / 2))
  [ "$base" -gt 0 ] || base=$per
  case $v in
    f32) name="float" ;; w8) name="int8 weights" ;; kv8) name="int8 cache" ;; w8kv8) name="both" ;;
  esac
  printf '%-22s %14d %9.2fx\n' "$name" "$per" "$(echo "$per / $base" | bc -l)"
done

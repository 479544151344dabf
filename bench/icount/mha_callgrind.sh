#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Executed instructions per MultiHeadAttention::forward on this machine's build (AVX2 on x86),
# counted by valgrind --tool=callgrind, for the benchmark's four configs; FLOP per instruction
# beside it. Instructions, not seconds: deterministic for a given binary, so it shows what a
# code change did where the shared machine's timings swing by 20-30%. Seconds come from
# bench/run.sh.
#   bash bench/icount/mha_callgrind.sh [configs...]     configs: 32 64 128 256 (default: all)
# Needs valgrind; builds Release into build/icount-host (EMHA_BUILD_ROOT to move it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${EMHA_BUILD_ROOT:-$root/build}/icount-host
configs=("$@")
[ ${#configs[@]} -gt 0 ] || configs=(32 64 128 256)
command -v valgrind >/dev/null || { echo "valgrind not found (apt-get install valgrind)" >&2; exit 1; }

# EMHA_ICOUNT_TREE: an existing Release build tree of the host library to link (the test suite
# passes its native Release tree); else one of its own.
lib_tree=${EMHA_ICOUNT_TREE:-$build/emha}
if [ -z "${EMHA_ICOUNT_TREE:-}" ]; then
  cmake -S "$root" -B "$lib_tree" -DCMAKE_BUILD_TYPE=Release -DEMHA_BUILD_TESTS=OFF \
    -DEMHA_BUILD_BENCH=OFF >/dev/null
fi
cmake --build "$lib_tree" -j "$(nproc)" --target emha >/dev/null
mkdir -p "$build"
g++ -O2 -std=c++17 -DNDEBUG -I "$root/lib/include" "$here/mha_callgrind.cpp" \
  "$lib_tree/lib/libemha.a" -o "$build/mha_callgrind"

count() {  # instructions executed by one run
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$build/mha_callgrind" "$@" 2>&1 |
    sed -nE 's/.*Collected : ([0-9]+).*/\1/p'
}

printf 'MultiHeadAttention::forward, batch 1, self-attention (valgrind --tool=callgrind instruction counts)\n'
printf '%-14s %16s %18s\n' 'S, D, H' instructions FLOP/instruction
for s in "${configs[@]}"; do
  case $s in
    32) d=64 h=4 ;; 64) d=128 h=4 ;; 128) d=256 h=8 ;; 256) d=512 h=8 ;;
    *) echo "unknown config $s (32, 64, 128 or 256)" >&2; exit 2 ;;
  esac
  one=$(count "$s" 1)
  three=$(count "$s" 3)
  per=$(((three - one) / 2))
  flop=$((8 * s * d * d + 4 * s * s * d))
  printf '%-14s %16d %18.2f\n' "$s, $d, $h" "$per" "$(echo "$flop / $per" | bc -l)"
done

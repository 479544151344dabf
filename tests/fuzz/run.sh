#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The fuzz targets (tests/fuzz/fuzz_forward.cpp and fuzz_blob.cpp, the weight blob loader: clang's
# libFuzzer, ASan + UBSan on the harness and on emha) built and run for a bounded time from the
# committed seed corpus (the loader for a third of the time, at least 20 s). Exits non-zero on any
# finding (a contract breach, a sanitizer report, a crash, a time-out), with the input that caused
# it under <out>/fuzz/findings/.
#   bash tests/fuzz/run.sh [seconds] [out]      default 90 s (forward), build trees under build/
# New inputs collect in <out>/fuzz/corpus-<name> (read again by the next run); the committed seeds
# in tests/fuzz/corpus/<name> are only read. To refresh them (a minimized union of both):
#   build/fuzz/emha_fuzz_forward -merge=1 tests/fuzz/corpus/forward build/fuzz/corpus-forward
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
seconds=${1:-90}
out=${2:-$root/build}
mkdir -p "$out"
dir=$(cd "$out" && pwd)/fuzz

# One kernel variant, the best this CPU runs (-march=native): the fuzzed calls run only the
# variant the CPU gets, so the other variants would be compiled for nothing.
CXX=clang++ cmake -S tests/fuzz -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMHA_X86_ISA=native >/dev/null
cmake --build "$dir" -j "$(nproc)"
mkdir -p "$dir/findings"
# fuzz <target> <corpus name> <seconds> <max_len> <what>: one target from its committed seeds.
fuzz() {
  local target=$1 corpus=$2 secs=$3 max_len=$4 what=$5
  local log=$dir/$target.log
  mkdir -p "$dir/corpus-$corpus"
  echo "fuzzing $what for ${secs}s (log: $log)"
  if ! "$dir/$target" "$dir/corpus-$corpus" "tests/fuzz/corpus/$corpus" -max_total_time="$secs" \
       -max_len="$max_len" -timeout=10 -print_final_stats=1 -artifact_prefix="$dir/findings/" >"$log" 2>&1; then
    grep -vE '^#[0-9]+ +(NEW|REDUCE|pulse|RELOAD)' "$log" | tail -n 80
    echo "fuzz: FINDING (the input is in $dir/findings/; rerun: $dir/$target <that file>)" >&2
    exit 1
  fi
  grep -E '^(stat::number_of_executed_units|stat::average_exec_per_sec|stat::new_units_added|Done)' "$log"
}
# Both targets at once when there are two CPUs (each fuzzes on one thread); their reports in order.
blob_seconds=$(( seconds / 3 > 20 ? seconds / 3 : 20 ))
if [ "$(nproc)" -ge 2 ]; then
  fuzz emha_fuzz_blob blob "$blob_seconds" 4096 "load_weights (weight blobs)" >"$dir/blob.report" 2>&1 &
  blob=$!
  fuzz emha_fuzz_forward forward "$seconds" 256 "forward, set_weights, forward_reference and ArenaRef::allocate"
  blob_rc=0
  wait $blob || blob_rc=$?
  cat "$dir/blob.report"
  exit $blob_rc
fi
fuzz emha_fuzz_forward forward "$seconds" 256 "forward, set_weights, forward_reference and ArenaRef::allocate"
fuzz emha_fuzz_blob blob "$blob_seconds" 4096 "load_weights (weight blobs)"

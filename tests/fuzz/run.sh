#!/usr/bin/env bash
# The fuzz target (tests/fuzz/fuzz_forward.cpp: clang's libFuzzer, ASan + UBSan on the harness and
# on emha) built and run for a bounded time from the committed seed corpus. Exits non-zero on any
# finding (a contract breach, a sanitizer report, a crash, a time-out), with the input that caused
# it under <out>/fuzz/findings/.
#   bash tests/fuzz/run.sh [seconds] [out]      default 90 s, build trees under build/
# New inputs collect in <out>/fuzz/corpus (read again by the next run); the committed seeds in
# tests/fuzz/corpus/forward are only read. To refresh them (a minimized union of both):
#   build/fuzz/emha_fuzz_forward -merge=1 tests/fuzz/corpus/forward build/fuzz/corpus
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
seconds=${1:-90}
out=${2:-$root/build}
mkdir -p "$out"
dir=$(cd "$out" && pwd)/fuzz

CXX=clang++ cmake -S tests/fuzz -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$dir" -j "$(nproc)"
mkdir -p "$dir/corpus" "$dir/findings"
log=$dir/fuzz.log
echo "fuzzing forward, set_weights, forward_reference and ArenaRef::allocate for ${seconds}s (log: $log)"
if ! "$dir/emha_fuzz_forward" "$dir/corpus" tests/fuzz/corpus/forward -max_total_time="$seconds" \
     -max_len=256 -timeout=10 -print_final_stats=1 -artifact_prefix="$dir/findings/" >"$log" 2>&1; then
  grep -vE '^#[0-9]+ +(NEW|REDUCE|pulse|RELOAD)' "$log" | tail -n 80
  echo "fuzz: FINDING (the input is in $dir/findings/; rerun: $dir/emha_fuzz_forward <that file>)" >&2
  exit 1
fi
grep -E '^(stat::number_of_executed_units|stat::average_exec_per_sec|stat::new_units_added|Done)' "$log"

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The posix pool under load: emha_worker_scaling (worker_scaling.cpp) at 1 and 2 workers, each
# alone and beside a busy thread, and asked for twice the CPUs (start_workers clamps it to the
# CPUs the process may use). Prints the table; fails when
#   2 workers beside a busy core take more than 1.25x one thread's time beside it,
#   2 x CPUs workers take more than 1.25x 2 workers' time,
#   2 workers on idle cores are not 1.5x faster than one thread on the forward cases,
# or when any run's bits changed (the program's own check), in three attempts out of three. On a
# single CPU only the bits count.
# These bars catch a pool that collapses (the earlier one ran 2 workers beside a busy core 8x
# slower than one thread) with room for a shared CI machine's noise; the targets (1.1x, 1.25x,
# 1.8x) and what each machine measured are in bench/README.md.
#   worker_scaling.sh PATH/TO/emha_worker_scaling
set -euo pipefail
bin=$1
cpus=$(nproc)
declare -A t
run() {  # run LABEL ARGS...: every "<case> <us>" line into t[LABEL,case]; an error ends the test
  local label=$1 out name us; shift
  out=$("$bin" "$@") || { echo "worker_scaling: FAIL, $bin $* (an error, or bits that changed)"; exit 1; }
  while read -r name us; do
    [ "$name" = workers ] && continue
    t[$label,$name]=$us
  done <<<"$out"
}
# One measurement of every configuration, its table and its verdict (0: every bar met).
attempt() {
  run one 1
  run two 2
  run one_busy 1 busy
  run two_busy 2 busy
  run over $((2 * cpus))
  printf '%-20s %10s %10s %8s %10s %10s %8s %10s %8s\n' case "1 us" "2 us" speedup "1+busy" "2+busy" ratio \
    "$((2 * cpus))req us" "vs 2"
  local fail=0 c speedup busy over
  for c in forward_128_256_8 forward_256_512_8 decode_2048_512_8 decode_2048_512_8_mqa; do
    read -r speedup busy over < <(awk -v a="${t[one,$c]}" -v b="${t[two,$c]}" -v c="${t[one_busy,$c]}" \
      -v d="${t[two_busy,$c]}" -v e="${t[over,$c]}" 'BEGIN { printf "%.2f %.2f %.2f\n", a / b, d / c, e / b }')
    printf '%-20s %10s %10s %7sx %10s %10s %7sx %10s %7sx\n' "$c" "${t[one,$c]}" "${t[two,$c]}" "$speedup" \
      "${t[one_busy,$c]}" "${t[two_busy,$c]}" "$busy" "${t[over,$c]}" "$over"
    [ "$cpus" -ge 2 ] || continue
    awk -v r="$busy" 'BEGIN { exit !(r > 1.25) }' && { echo "over the bar $c: 2 workers beside a busy core ${busy}x one thread's time"; fail=1; }
    awk -v r="$over" 'BEGIN { exit !(r > 1.25) }' && { echo "over the bar $c: $((2 * cpus)) workers asked ${over}x 2 workers' time"; fail=1; }
    if [[ $c == forward_* ]]; then
      awk -v r="$speedup" 'BEGIN { exit !(r < 1.5) }' && { echo "over the bar $c: 2 workers only ${speedup}x one thread"; fail=1; }
    fi
  done
  return $fail
}
# Up to three attempts: a pool that collapses misses the bars every time, a noisy neighbour once.
for i in 1 2 3; do
  attempt && { echo "worker_scaling: every bar met (attempt $i)"; exit 0; }
done
echo "worker_scaling: FAIL, the bars missed in 3 attempts"
exit 1

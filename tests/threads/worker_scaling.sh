#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The posix pool under load: emha_worker_scaling (worker_scaling.cpp) with 2 workers, with 2
# workers beside a busy thread, and asked for twice the CPUs (start_workers clamps it to the CPUs
# the process may use). Prints one table per attempt; fails when one of these bars is missed in
# every one of five attempts:
#   machine: on the forwards, 2 workers reach less than 0.75 of what this machine gives two
#            threads of the same work (two single-thread copies at once) at the same time, in
#            the attempts where that is at least 1.6x one thread's throughput (where the machine
#            gave no second core it cannot judge the pool: never in five attempts, the bar says
#            so and passes),
#   busy:    2 workers beside a busy core take more than 1.25x one thread's time beside it,
#   over:    2 x CPUs workers asked give less than 1/1.25 of 2 workers' speed-up over one thread
#            (each speed-up measured within its own process),
# or at once when any call's bits differ from one thread's (the program's own check). On a single
# CPU only the bits count.
# Why these forms: a pool that collapses (the earlier one ran 2 workers beside a busy core 8x
# slower than one thread) or never runs a task on its workers misses a bar every time, while a
# shared CI machine's neighbours take a core from one attempt or another. The machine bar is a
# fraction of what the cores give right now, so a neighbour that holds part of a core lowers the
# bar with the pool's time, where a fixed speed-up over one thread would fail. Each bar is judged
# on its best attempt. The targets and what each machine measured are in bench/README.md.
#   worker_scaling.sh PATH/TO/emha_worker_scaling
set -euo pipefail
bin=$1
cpus=$(nproc)
attempts=5
cases="forward_128_256_8 forward_256_512_8 decode_2048_512_8 decode_2048_512_8_mqa"
declare -A pool one machine best
run() {  # run LABEL ARGS...: each "<case> <pool> <one> <machine>" line into the arrays
  local label=$1 out name p o m; shift
  out=$("$bin" "$@") || { echo "worker_scaling: FAIL, $bin $* (an error, or bits that differ from one thread's)"; exit 1; }
  while read -r name p o m; do
    [ "$name" = workers ] && continue
    pool[$label,$name]=$p one[$label,$name]=$o machine[$label,$name]=$m
  done <<<"$out"
}
# keep KEY VALUE lower|higher: best[KEY] becomes VALUE where it is the better one.
keep() {
  local cur=${best[$1]:-}
  if [ -z "$cur" ] || awk -v a="$2" -v b="$cur" -v d="$3" 'BEGIN { exit !(d == "lower" ? a < b : a > b) }'; then
    best[$1]=$2
  fi
}
# One measurement of every configuration and its table; each ratio updates its best.
#   speedup: one thread's time / 2 workers' time (shown, not judged)
#   copies:  2 x one thread's time / two copies' time, the machine's two-thread speed-up
#   machine: two copies' time / (2 x 2 workers' time), the fraction of the machine's throughput
#   busy:    2 workers' time / one thread's time, both beside the busy thread
#   over:    2 workers' speed-up / 2 x CPUs workers' speed-up (each over one thread in its process)
attempt() {
  run two 2
  run busy 2 busy
  run over $((2 * cpus))
  printf '%-22s %8s %8s %8s %9s %7s %8s %8s %8s %7s %9s %7s\n' case "1 us" "2 us" speedup "2 copies" copies \
    machine "1+busy" "2+busy" busy "$((2 * cpus))req us" over
  local c speedup copies mach busy over
  for c in $cases; do
    read -r speedup copies mach busy over < <(awk -v o="${one[two,$c]}" -v p="${pool[two,$c]}" \
      -v m="${machine[two,$c]}" -v bo="${one[busy,$c]}" -v bp="${pool[busy,$c]}" -v qo="${one[over,$c]}" \
      -v qp="${pool[over,$c]}" 'BEGIN { printf "%.2f %.2f %.2f %.2f %.2f\n", o / p, (m > 0 ? 2 * o / m : 0),
        m / (2 * p), bp / bo, (o / p) / (qo / qp) }')
    printf '%-22s %8s %8s %7sx %9s %6sx %8s %8s %8s %6sx %9s %6sx\n' "$c" "${one[two,$c]}" "${pool[two,$c]}" \
      "$speedup" "${machine[two,$c]}" "$copies" "$mach" "${one[busy,$c]}" "${pool[busy,$c]}" "$busy" \
      "${pool[over,$c]}" "$over"
    if awk -v r="$copies" 'BEGIN { exit !(r >= 1.6) }'; then  # 0 where not measured (decode)
      keep "machine,$c" "$mach" higher
    fi
    keep "busy,$c" "$busy" lower
    keep "over,$c" "$over" lower
  done
}
# misses: prints every bar whose best attempt so far misses it; returns 0 when none does.
misses() {
  local c miss=0
  [ "$cpus" -ge 2 ] || return 0
  for c in $cases; do
    if [ -n "${best[machine,$c]:-}" ] &&
      awk -v r="${best[machine,$c]}" 'BEGIN { exit !(r < 0.75) }'; then
      echo "  $c: 2 workers at best ${best[machine,$c]} of the machine's two-thread throughput"; miss=1
    fi
    if awk -v r="${best[busy,$c]}" 'BEGIN { exit !(r > 1.25) }'; then
      echo "  $c: 2 workers beside a busy core at best ${best[busy,$c]}x one thread's time"; miss=1
    fi
    if awk -v r="${best[over,$c]}" 'BEGIN { exit !(r > 1.25) }'; then
      echo "  $c: $((2 * cpus)) workers asked at best 1/${best[over,$c]} of 2 workers' speed-up"; miss=1
    fi
  done
  return $miss
}
# unjudged: prints every machine bar no attempt so far could judge; returns 0 when none.
unjudged() {
  local c none=0
  [ "$cpus" -ge 2 ] || return 0
  for c in $cases; do
    [[ $c == forward_* && -z ${best[machine,$c]:-} ]] && { echo "  $c: two copies never reached 1.6x one thread"; none=1; }
  done
  return $none
}
for ((i = 1; i <= attempts; i++)); do
  attempt
  if report=$(misses); then
    if waiting=$(unjudged); then
      echo "worker_scaling: every bar met in its best attempt (after $i)"
      exit 0
    fi
    [ "$i" -lt "$attempts" ] && printf 'machine bars not judged yet:\n%s\n' "$waiting" && continue
    printf 'worker_scaling: every judged bar met; not judged in %s attempts:\n%s\n' "$attempts" "$waiting"
    exit 0
  fi
  printf 'bars missed so far:\n%s\n' "$report"
done
echo "worker_scaling: FAIL, bars missed in all $attempts attempts"
exit 1

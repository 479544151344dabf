#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The thread pool on this CPU (emha_worker_scaling, worker_scaling.cpp beside this script):
#  1. scaling: 1, 2, 4, ... workers up to the CPUs the process may use, then twice them (more
#     than the CPUs: start_workers clamps the request), each in a process of its own; per case
#     (forwards at (S, D, H) = (128, 256, 8) and (256, 512, 8); decode steps over 2048 cached
#     positions at (D, H) = (512, 8), MHA and MQA) the wall time of a call and its speed-up over
#     one thread, timed in the same process between the pool's calls.
#  2. bars, with 2 workers, each printed as met or missed (none fails this script; the suite
#     proves the pool's properties without timing, tests/threads):
#       machine  on the forwards, 2 workers reach >= 0.75 of two single-thread copies'
#                throughput timed in the same moments (judged where the copies reach 1.6x
#                one thread: else the machine gave no second core to judge a pool on),
#       busy     beside a thread that spins all the time, 2 workers take <= 1.25x one thread,
#       over     twice the CPUs asked gives >= 1/1.25 of 2 workers' speed-up,
#       bursty   beside a thread that spins 1-20 ms and sleeps 1-20 ms: on the forwards 2 workers
#                reach >= 0.85 of the two copies' throughput in the same moments, and a decode
#                step takes <= 1.0x one thread's time.
# Every run checks that its bits are one thread's: a difference fails the script.
#   worker_table.sh PATH/TO/emha_worker_scaling     (EMHA_WORKER_BLOCKS=N: shorter runs)
set -euo pipefail
bin=$1
cpus=$(nproc)
declare -A pool one machine
cases=()
# run LABEL ARGS...: each "<case> <pool us> <one us> <machine us>" line into the arrays.
run() {
  local label=$1 out name p o m; shift
  out=$("$bin" "$@") || { echo "worker_table: FAIL, $bin $* (an error, or bits that differ from one thread's)"; exit 1; }
  while read -r name p o m; do
    [ "$name" = workers ] && continue
    [ "$label" = 1 ] && cases+=("$name")
    pool[$label,$name]=$p one[$label,$name]=$o machine[$label,$name]=$m
  done <<<"$out"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

counts=()
for ((n = 1; n < cpus; n *= 2)); do counts+=("$n"); done
counts+=("$cpus" "$((2 * cpus))")
for n in "${counts[@]}"; do run "$n" "$n"; done
echo "scaling: wall time per call (us) and speed-up over one thread in the same process"
printf '%-12s' workers
for c in "${cases[@]}"; do printf ' %24s' "$c"; done
printf '\n'
for n in "${counts[@]}"; do
  label=$n
  [ "$n" -gt "$cpus" ] && label="$n (asked)"
  printf '%-12s' "$label"
  for c in "${cases[@]}"; do
    printf ' %24s' "$(awk -v a="${one[$n,$c]}" -v b="${pool[$n,$c]}" 'BEGIN { printf "%.1f us %5.2fx", b, a / b }')"
  done
  printf '\n'
done
[ "$cpus" -ge 2 ] || { echo "bars: one CPU, nothing to judge"; exit 0; }

run busy 2 busy
run bursty 2 bursty
met=0 missed=0
# bar NAME CASE VALUE OP TARGET NOTE: prints one line, met or missed.
bar() {
  local verdict=missed
  if awk -v v="$3" -v t="$5" -v op="$4" 'BEGIN { exit !(op == ">=" ? v >= t : v <= t) }'; then verdict=met; fi
  [ $verdict = met ] && met=$((met + 1)) || missed=$((missed + 1))
  printf '%-7s %-22s %6s %s %-5s %-7s %s\n' "$1" "$2" "$3" "$4" "$5" "$verdict" "$6"
}
echo
echo "bars (2 workers):"
for c in "${cases[@]}"; do
  if [[ $c == forward_* ]]; then
    copies=$(ratio "$(awk -v o="${one[2,$c]}" 'BEGIN { print 2 * o }')" "${machine[2,$c]}")
    if awk -v r="$copies" 'BEGIN { exit !(r >= 1.6) }'; then
      bar machine "$c" "$(ratio "${machine[2,$c]}" "$(awk -v p="${pool[2,$c]}" 'BEGIN { print 2 * p }')")" '>=' 0.75 \
        "of two copies' throughput (copies ${copies}x one thread)"
    else
      printf '%-7s %-22s not judged: two copies reached %sx one thread\n' machine "$c" "$copies"
    fi
  fi
  bar busy "$c" "$(ratio "${pool[busy,$c]}" "${one[busy,$c]}")" '<=' 1.25 "x one thread's time, beside a busy thread"
  bar over "$c" "$(ratio "$(ratio "${one[2,$c]}" "${pool[2,$c]}")" \
    "$(ratio "${one[$((2 * cpus)),$c]}" "${pool[$((2 * cpus)),$c]}")")" '<=' 1.25 "2 workers' speed-up / that of $((2 * cpus)) asked"
  if [[ $c == forward_* ]]; then
    bar bursty "$c" "$(ratio "${machine[bursty,$c]}" "$(awk -v p="${pool[bursty,$c]}" 'BEGIN { print 2 * p }')")" '>=' 0.85 \
      "of two copies' throughput, beside a bursty thread"
  else
    bar bursty "$c" "$(ratio "${pool[bursty,$c]}" "${one[bursty,$c]}")" '<=' 1.00 "x one thread's time, beside a bursty thread"
  fi
done
echo "bars: $met met, $missed missed"

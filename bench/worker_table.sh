#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The thread pool's scaling on this CPU: emha_worker_scaling (tests/threads/worker_scaling.cpp)
# at 1, 2, 4, ... workers up to the CPUs the process may use, then the CPUs, then twice them
# (more workers than CPUs: start_workers clamps the request), each in a process of its own. Per
# case (forwards at (S, D, H) = (128, 256, 8) and (256, 512, 8); decode steps over 2048 cached
# positions at (D, H) = (512, 8), MHA and MQA), the median wall time of a call and its speed-up
# over one thread, timed in the same process between the pool's calls (a neighbour's load falls
# on both). Every run checks that its bits are one thread's.
#   worker_table.sh PATH/TO/emha_worker_scaling
set -euo pipefail
bin=$1
cpus=$(nproc)
counts=()
for ((n = 1; n < cpus; n *= 2)); do counts+=("$n"); done
counts+=("$cpus" "$((2 * cpus))")
declare -A t one
cases=()
for n in "${counts[@]}"; do
  out=$("$bin" "$n")
  while read -r name us us1 _; do
    [ "$name" = workers ] && continue
    [ "$n" = 1 ] && cases+=("$name")
    t[$n,$name]=$us one[$n,$name]=$us1
  done <<<"$out"
done
printf '%-12s' "workers"
for c in "${cases[@]}"; do printf ' %24s' "$c"; done
printf '\n'
for n in "${counts[@]}"; do
  label=$n
  [ "$n" -gt "$cpus" ] && label="$n (asked)"
  printf '%-12s' "$label"
  for c in "${cases[@]}"; do
    printf ' %24s' "$(awk -v a="${one[$n,$c]}" -v b="${t[$n,$c]}" 'BEGIN { printf "%.1f us %5.2fx", b, a / b }')"
  done
  printf '\n'
done

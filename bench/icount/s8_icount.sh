#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Executed instructions of one forward, full-integer int8 and 16x8 against float, at MhaConfig<64, 4, 32>
# and <128, 4, 64> (causal self-attention over d_model / 2 tokens; bench/icount/s8_icount.cpp),
# counted exactly under qemu: qemu-system-arm for a Cortex-M, qemu-aarch64 for aarch64. Each
# count is half the difference of a run with 3 forwards and one with 1. Instructions, not cycles.
#   bash bench/icount/s8_icount.sh cortex-m4|cortex-m7|cortex-m55 [cmake args...]
#   bash bench/icount/s8_icount.sh aarch64 [cpu=cortex-a72]     (cortex-a76: SDOT)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/trace_count.sh"
root=$(cd "$here/../.." && pwd)
target=${1:?cortex-m4, cortex-m7, cortex-m55 or aarch64}
shift
if [ "$target" = aarch64 ]; then
  cpu=${1:-cortex-a72}
  build=${EMHA_BUILD_ROOT:-$root/build}/icount-s8-$cpu
  mkdir -p "$build"
  cmake -S "$root" -B "$build/emha" --toolchain "$root/toolchains/aarch64-linux-gnu.cmake" \
    -DEMHA_ARM_CPU="$cpu" -DCMAKE_BUILD_TYPE=Release -DEMHA_BUILD_TESTS=OFF -DEMHA_BUILD_BENCH=OFF >/dev/null
  cmake --build "$build/emha" -j "$(nproc)" >/dev/null
  for dim in 64 128; do
    for kind in f32 s8 s16x8; do
      for reps in 1 3; do
        aarch64-linux-gnu-g++ -O2 -std=c++17 -mcpu="$cpu" -DNDEBUG -I "$root/lib/include" -DEMHA_ICOUNT_D=$dim \
          -DEMHA_ICOUNT_KIND=$(case $kind in s8) echo 1 ;; s16x8) echo 2 ;; *) echo 0 ;; esac) \
          -DEMHA_ICOUNT_REPS=$reps "$here/s8_icount.cpp" \
          "$build/emha/lib/libemha.a" -o "$build/emha_icount_${kind}_${dim}_${reps}"
      done
    done
  done
  count() { trace_count qemu-aarch64 -L / -cpu "$cpu" "$1"; }
  label="aarch64 $cpu"
else
  case $target in
    cortex-m4) board=mps2-an386 ;;
    cortex-m7) board=mps2-an500 ;;
    cortex-m55) board=mps3-an547 ;;
    *) echo "target: cortex-m4, cortex-m7, cortex-m55 or aarch64" >&2; exit 2 ;;
  esac
  build=${EMHA_BUILD_ROOT:-$root/build}/icount-$target
  cmake -S "$root/tests/firmware" -B "$build" --toolchain "$root/toolchains/$target.cmake" \
    -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
  targets=()
  for dim in 64 128; do for kind in f32 s8 s16x8; do for reps in 1 3; do targets+=("emha_icount_${kind}_${dim}_${reps}"); done; done; done
  cmake --build "$build" -j "${EMHA_JOBS:-$(nproc)}" --target "${targets[@]}" >/dev/null
  build=$build/bench-device
  count() {
    trace_count qemu-system-arm -M "$board" -nographic -monitor none -serial none \
      -semihosting-config enable=on,target=native -kernel "$1.elf"
  }
  label="$target ${*:-(toolchain defaults)}"
fi
printf 'one forward, causal self-attention, %s (qemu instruction counts)\n' "$label"
printf '%-18s %14s %14s %8s %14s %8s\n' config float int8 "fewer" 16x8 "fewer"
for dim in 64 128; do
  declare -A per
  for kind in f32 s8 s16x8; do
    one=$(count "$build/emha_icount_${kind}_${dim}_1")
    three=$(count "$build/emha_icount_${kind}_${dim}_3")
    per[$kind]=$(((three - one) / 2))
  done
  printf '%-18s %14d %14d %7.2fx %14d %7.2fx\n' "<$dim, 4, $((dim / 2))>" "${per[f32]}" "${per[s8]}" \
    "$(echo "${per[f32]} / ${per[s8]}" | bc -l)" "${per[s16x8]}" "$(echo "${per[f32]} / ${per[s16x8]}" | bc -l)"
done

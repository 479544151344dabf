#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Executed instructions of one MultiHeadAttention::forward (MhaConfig<64, 4, 32>, causal
# self-attention over 32 tokens, weights in place) on a Cortex-M, counted exactly by
# qemu-system-arm (-singlestep: one log line per executed instruction): the firmware
# bench/icount/mha_icount_m.cpp run with 1 and with 3 forwards, half the difference.
#   bash bench/icount/mha_icount_m.sh [core=cortex-m55] [cmake args...]
#   bash bench/icount/mha_icount_m.sh cortex-m55 -DEMHA_SIMD=OFF -DEMHA_EXPECTED_ISA=scalar
# Build tree: ${EMHA_BUILD_ROOT:-build}/icount-<core>[-scalar]. Instructions, not cycles.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/trace_count.sh"
root=$(cd "$here/../.." && pwd)
core=${1:-cortex-m55}
[ $# -gt 0 ] && shift
suffix=
for a in "$@"; do [ "$a" = "-DEMHA_SIMD=OFF" ] && suffix=-scalar; done
build=${EMHA_BUILD_ROOT:-$root/build}/icount-$core$suffix
case $core in
  cortex-m4) board=mps2-an386 ;;
  cortex-m7) board=mps2-an500 ;;
  cortex-m55) board=mps3-an547 ;;
  *) echo "core: cortex-m4, cortex-m7 or cortex-m55" >&2; exit 2 ;;
esac
cmake -S "$root/tests/firmware" -B "$build" --toolchain "$root/toolchains/$core.cmake" \
  -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$build" -j "${EMHA_JOBS:-$(nproc)}" --target emha_icount_mha_1 emha_icount_mha_3 >/dev/null
count() {
  trace_count qemu-system-arm -M "$board" -nographic -monitor none -serial none \
    -semihosting-config enable=on,target=native -kernel "$1"
}
one=$(count "$build/bench-device/emha_icount_mha_1.elf")
three=$(count "$build/bench-device/emha_icount_mha_3.elf")
echo "$core ${*:-(toolchain defaults)}: 1 forward: $one, 3 forwards: $three," \
  "one forward: $(((three - one) / 2)) instructions"

#!/usr/bin/env bash
# FLOP per executed instruction of f32 GEMM on aarch64, for emha and its peers, counted exactly
# by qemu (one log line per executed instruction). qemu counts instructions, not cycles: seconds
# come only from the on-device benchmark on a real Pi.
#   bash bench/icount/gemm_icount.sh [n=128] [cpu=cortex-a72]
# Needs g++-aarch64-linux-gnu, qemu-user, libeigen3-dev; libopenblas-dev:arm64 for the OpenBLAS row.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
n=${1:-128}
cpu=${2:-cortex-a72}
build=${EMHA_BUILD_ROOT:-$root/build}/icount-aarch64
mkdir -p "$build"

cmake -S "$root" -B "$build/emha" --toolchain "$root/toolchains/aarch64-linux-gnu.cmake" \
  -DEMHA_ARM_CPU="$cpu" -DCMAKE_BUILD_TYPE=Release -DEMHA_BUILD_TESTS=OFF -DEMHA_BUILD_BENCH=OFF >/dev/null
cmake --build "$build/emha" -j "$(nproc)" >/dev/null

flags=(-O2 -std=c++17 -mcpu="$cpu" -DNDEBUG -I "$root/lib/include" -I /usr/include/eigen3 -DEMHA_ICOUNT_EIGEN)
libs=("$build/emha/lib/libemha.a")
if [ -f /usr/lib/aarch64-linux-gnu/libopenblas.so ] || [ -f /usr/lib/aarch64-linux-gnu/openblas-pthread/libopenblas.so ]; then
  flags+=(-DEMHA_ICOUNT_OPENBLAS -I /usr/include/aarch64-linux-gnu)
  libs+=(-lopenblas)
fi
aarch64-linux-gnu-g++ "${flags[@]}" "$here/gemm_icount.cpp" "${libs[@]}" -o "$build/gemm_icount"

count() {  # executed instructions of one run
  OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE=CORTEXA72 \
    qemu-aarch64 -L / -cpu "$cpu" -singlestep -d exec,nochain -D /dev/stdout "$build/gemm_icount" "$@" |
    grep -c '^Trace'
}

flop=$((2 * n * n * n))
printf 'f32 GEMM %dx%dx%d on %s (qemu-aarch64 instruction counts; the limit is 8 FLOP/instruction)\n' "$n" "$n" "$n" "$cpu"
printf '%-10s %14s %18s\n' peer instructions FLOP/instruction
for who in emha eigen openblas; do
  one=$(count "$who" "$n" 1) || { printf '%-10s %14s\n' "$who" "not built"; continue; }
  three=$(count "$who" "$n" 3)
  per=$(((three - one) / 2))
  printf '%-10s %14d %18.2f\n' "$who" "$per" "$(echo "$flop / $per" | bc -l)"
done

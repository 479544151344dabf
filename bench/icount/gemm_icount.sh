#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# FLOP per executed instruction of f32 GEMM on ARM Linux (aarch64, or armv7 with NEON), for emha and
# its peers, counted exactly by qemu (one log line per executed instruction). qemu counts
# instructions, not cycles: seconds come only from the on-device benchmark on a real Pi.
#   bash bench/icount/gemm_icount.sh [n=128] [cpu=cortex-a72]     aarch64
#   bash bench/icount/gemm_icount.sh [n=128] cortex-a7 armv7       armv7 + NEON (a Pi 2/3/4 on
#                                                                  32-bit Raspberry Pi OS)
# Needs g++-aarch64-linux-gnu / g++-arm-linux-gnueabihf, qemu-user, libeigen3-dev;
# libopenblas-dev:arm64 / :armhf for the OpenBLAS row. The XNNPACK row uses Debian's arm64 / armhf
# XNNPACK packages unpacked into the build folder (apt-get download, dpkg-deb -x), not installed:
# libxnnpack0 cannot be installed for two architectures at once, and the host's copy is
# python3-torch's.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/trace_count.sh"
root=$(cd "$here/../.." && pwd)
n=${1:-128}
cpu=${2:-cortex-a72}
arch=${3:-aarch64}
case $arch in
  aarch64)
    toolchain=aarch64-linux-gnu.cmake triplet=aarch64-linux-gnu qemu=qemu-aarch64 debarch=arm64
    arch_flags=(-mcpu="$cpu") emha_cpu=(-DEMHA_ARM_CPU="$cpu") coretype=CORTEXA72 ;;
  armv7)
    # The toolchain file's flags (armv7-a, NEON + VFPv4, hard float); OpenBLAS's ARMV7 kernels.
    toolchain=armv7-linux-gnueabihf.cmake triplet=arm-linux-gnueabihf qemu=qemu-arm debarch=armhf
    arch_flags=(-march=armv7-a -mfpu=neon-vfpv4 -mfloat-abi=hard -Wno-psabi) emha_cpu=() coretype=ARMV7 ;;
  *) echo "arch: aarch64 or armv7" >&2; exit 2 ;;
esac
build=${EMHA_BUILD_ROOT:-$root/build}/icount-$arch
mkdir -p "$build"

cmake -S "$root" -B "$build/emha" --toolchain "$root/toolchains/$toolchain" \
  "${emha_cpu[@]}" -DCMAKE_BUILD_TYPE=Release -DEMHA_BUILD_TESTS=OFF -DEMHA_BUILD_BENCH=OFF >/dev/null
cmake --build "$build/emha" -j "$(nproc)" >/dev/null

flags=(-O2 -std=c++17 "${arch_flags[@]}" -DNDEBUG -I "$root/lib/include" -I /usr/include/eigen3 -DEMHA_ICOUNT_EIGEN)
libs=("$build/emha/lib/libemha.a")
if [ -f "/usr/lib/$triplet/libopenblas.so" ] || [ -f "/usr/lib/$triplet/openblas-pthread/libopenblas.so" ]; then
  flags+=(-DEMHA_ICOUNT_OPENBLAS -I "/usr/include/$triplet")
  libs+=(-lopenblas)
fi
# XNNPACK and what it links (cpuinfo, pthreadpool; clog is inside libcpuinfo), unpacked once.
xnn=$build/xnnpack
if [ ! -f "$xnn/usr/lib/$triplet/libXNNPACK.so" ]; then
  rm -rf "$xnn" && mkdir -p "$xnn/debs"
  # (As root, apt warns that its _apt user cannot write here: the log keeps that out of sight.)
  if (cd "$xnn/debs" && apt-get download "libxnnpack-dev:$debarch" "libxnnpack0:$debarch" \
        "libcpuinfo0:$debarch" "libpthreadpool0:$debarch" "libpthreadpool-dev:$debarch") \
        >"$xnn/download.log" 2>&1; then
    for deb in "$xnn"/debs/*.deb; do dpkg-deb -x "$deb" "$xnn"; done
  else
    cat "$xnn/download.log" >&2
    echo "XNNPACK: apt-get download of the $debarch packages failed, its row is left out" >&2
  fi
fi
if [ -f "$xnn/usr/lib/$triplet/libXNNPACK.so" ]; then
  flags+=(-DEMHA_ICOUNT_XNNPACK -I "$xnn/usr/include")
  # DT_RPATH, not RUNPATH: it also finds libXNNPACK's own libcpuinfo and libpthreadpool.
  libs+=(-L "$xnn/usr/lib/$triplet" -Wl,--disable-new-dtags,-rpath,"$xnn/usr/lib/$triplet" -lXNNPACK)
fi
"$triplet-g++" "${flags[@]}" "$here/gemm_icount.cpp" "${libs[@]}" -o "$build/gemm_icount"

count() {  # executed instructions of one run
  OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE=$coretype trace_count "$qemu" -L / -cpu "$cpu" "$build/gemm_icount" "$@"
}

flop=$((2 * n * n * n))
printf 'f32 GEMM %dx%dx%d on %s, %s (%s instruction counts; the limit is 8 FLOP/instruction)\n' "$n" "$n" "$n" "$arch" "$cpu" "$qemu"
printf '%-10s %14s %18s\n' peer instructions FLOP/instruction
for who in emha eigen openblas xnnpack; do
  one=$(count "$who" "$n" 1) || { printf '%-10s %14s\n' "$who" "not built"; continue; }
  three=$(count "$who" "$n" 3)
  per=$(((three - one) / 2))
  printf '%-10s %14d %18.2f\n' "$who" "$per" "$(echo "$flop / $per" | bc -l)"
done

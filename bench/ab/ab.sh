#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Paired A/B timing of two emha revisions in one process (see ab_main.cpp for why).
#   bash bench/ab/ab.sh A B [--pairs N] [--batch-ms T] [--filter REGEX] [--require-equal 1]
#                           [--offset-bytes N]   (side B's GEMM operands N bytes off a cache line)
#                           [--isa NAME]         (both sides on kernel variant NAME, e.g. avx512)
# A and B: a source directory (`.` is the working tree, uncommitted changes included) or a git
# revision of this repository (exported with git archive), each built Release into a
# libemha_ab.so under build/ab/ (ab_side.cpp uses today's API: an old revision may not build); the cases are bench_gemm's shapes (nt/nn, packing per call and
# pre-packed) and bench_mha's four configs, e.g. --filter 'gemm/nt/.*/call|mha/'.
# Prints per case both sides' median GFLOP/s, the median B/A speed ratio over the pairs (> 1: B
# is faster) with its interquartile range, and how far the two sides' outputs differ.
#   EMHA_BUILD_ROOT  where build trees go (default: build/)
#   EMHA_AB_CMAKE_ARGS  more configure arguments for both sides (the test suite's smoke run:
#                       -DEMHA_X86_ISA=native, one kernel variant to build instead of five)
set -euo pipefail
caller=$(pwd)
cd "$(dirname "$0")/../.."
root=$(pwd)
if [ $# -lt 2 ]; then
  sed -n '2,11p' "$0" >&2
  exit 2
fi
out=${EMHA_BUILD_ROOT:-$root/build}/ab
mkdir -p "$out"

# Each side is built in its own tree: a revision is exported once to $out/<commit>/src and built
# in $out/<commit>/build; a directory is built in $out/dir-<hash of its path>/build.
# A directory (relative to where ab.sh was called from) wins over a revision of the same name.
so=()
for spec in "$1" "$2"; do
  spec_dir=$(cd "$caller" && [ -d "$spec" ] && cd "$spec" && pwd || true)
  if [ -n "$spec_dir" ]; then
    tree=$spec_dir
    dir=$out/dir-$(echo "$spec_dir" | md5sum | cut -c1-12)
  else
    dir=$out/$(git -C "$root" rev-parse --verify "$spec^{commit}")
    tree=$dir/src
    if [ ! -d "$tree" ]; then  # exported whole or not at all: an interrupted export is not kept
      rm -rf "$tree.part" && mkdir -p "$tree.part"
      git -C "$root" archive --format=tar "$spec" | tar -x -C "$tree.part"
      mv "$tree.part" "$tree"
    fi
  fi
  echo "side $([ ${#so[@]} -eq 0 ] && echo A || echo B): $spec ($tree)"
  # shellcheck disable=SC2086  # EMHA_AB_CMAKE_ARGS: words for both sides' configure step
  cmake -S "$root/bench/ab" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release -DEMHA_AB_TREE="$tree" \
    ${EMHA_AB_CMAKE_ARGS:-} >/dev/null
  cmake --build "$dir/build" -j "$(nproc)" --target emha_ab >/dev/null
  # Only the C entry points leave the shared object: each side keeps its own emha.
  leaked=$(nm -D --defined-only "$dir/build/libemha_ab.so" | awk '$3 !~ /^ab_/ {print $3}')
  if [ -n "$leaked" ]; then
    echo "libemha_ab.so of $spec exports more than ab_*: $leaked" >&2
    exit 1
  fi
  so+=("$dir/build/libemha_ab.so")
done
shift 2
"${CXX:-c++}" -std=c++17 -O2 -Wall -Wextra -I "$root/bench" "$root/bench/ab/ab_main.cpp" -o "$out/ab_main" -ldl
"$out/ab_main" "${so[0]}" "${so[1]}" "$@"

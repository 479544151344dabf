#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's "From PyTorch to the device" commands, exactly as written there: the ```sh block
# after the `<!-- readme-commands export -->` marker, run from the checkout's root. Fails if the
# block is missing, if any command fails, or if emha-run's reference check does not say ok.
set -euo pipefail
cd "$(dirname "$0")/../.."
script=$(awk '/<!-- readme-commands export -->/ {found = 1; next}
              found && /^```sh/ {inside = 1; next}
              inside && /^```/ {exit}
              inside {print}' README.md)
[ -n "$script" ] || { echo "readme_flow: no export commands in README.md" >&2; exit 1; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
bash -euo pipefail -c "$script" 2>&1 | tee "$log"
# Host, Pi (qemu-aarch64), Cortex-M4 (qemu-system-arm) and the int8 layer on the host: four
# reference checks, all ok; the int8 export says how far quantization moves the output, and
# emha-run gives the int8 layer's bytes beside the float ones.
[ "$(grep -c '^\(1: \)\?reference: .*ok$' "$log")" -eq 4 ] || { echo "readme_flow: a reference check did not pass" >&2; exit 1; }
grep -q '^emha-export: int8 weights move the reference output by max ' "$log" ||
  { echo "readme_flow: the int8 export printed no output error" >&2; exit 1; }
grep -q '^emha-run: build/model/mha_w8.bin: int8 weights 16384 B + scales 1024 B (float32: 65536 B)$' "$log" ||
  { echo "readme_flow: emha-run printed no int8 bytes" >&2; exit 1; }
# The Pi's timings under qemu-aarch64 say they are emulated; the host's do not.
grep -q '^forward: .*(emulated' "$log" || { echo "readme_flow: the Pi's timings under qemu are not labelled emulated" >&2; exit 1; }
[ "$(grep -c '^forward: .*(emulated' "$log")" -eq 1 ] || { echo "readme_flow: a host timing is labelled emulated" >&2; exit 1; }
# emha-run's answers: --help, a --seq above the Config's maximum, a blob of another Config.
build/run/emha-run --help | grep -q -- '--seq S' || { echo "readme_flow: emha-run --help" >&2; exit 1; }
out=$(build/run/emha-run build/model/mha_w8.bin --seq 999) && { echo "readme_flow: --seq 999 accepted" >&2; exit 1; }
grep -q -- '--max-seq-q 999' <<<"$out" || { echo "readme_flow: --seq 999: $out" >&2; exit 1; }
out=$(build/run/emha-run tests/export/fixtures/nn_mha_int8.bin) && { echo "readme_flow: another Config's blob accepted" >&2; exit 1; }
grep -q 'd_model is 16 in the blob, 64 in' <<<"$out" || { echo "readme_flow: another Config's blob: $out" >&2; exit 1; }
# emha-run for a layer with no KvCache (the blog block as written: the flat head split) builds,
# meets its reference and says why it does not decode.
# Another model in the README's host tree: its library is built, only emha-run compiles again.
cmake -S . -B build/run -DEMHA_RUN_MODEL="$PWD/tests/export/fixtures/blog.hpp" \
  -DEMHA_RUN_NAME=export_fixtures::blog >/dev/null
cmake --build build/run --target emha-run >/dev/null
out=$(build/run/emha-run tests/export/fixtures/blog.bin --reps 5)
grep -q '^reference: .*ok$' <<<"$out" && grep -q '^decode: none (the flat head split' <<<"$out" ||
  { echo "readme_flow: emha-run for the flat head split: $out" >&2; exit 1; }
echo "readme_flow: the README's export commands ran; host, Pi and Cortex-M4 match the exported reference"

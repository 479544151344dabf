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
# Host, Pi (qemu-aarch64) and Cortex-M4 (qemu-system-arm): three reference checks, all ok.
[ "$(grep -c '^\(1: \)\?reference: .*ok$' "$log")" -eq 3 ] || { echo "readme_flow: a reference check did not pass" >&2; exit 1; }
echo "readme_flow: the README's export commands ran; host, Pi and Cortex-M4 match the exported reference"

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The x86-64 kernel variants must not share code: each variant's objects (lib/src/isa.hpp) may
# define out-of-line code only in their own namespace (emha::...::isa_<variant>). A weak symbol
# outside it (an inline function or template of a header, compiled with this variant's flags)
# could be the copy the linker keeps for every caller, other variants and the CPU-detection code
# included, and carry instructions an older CPU lacks. Optimized builds inline those helpers
# (MinSizeRel compiles the variants at -O2: lib/CMakeLists.txt); this test keeps it so (ctest,
# Release, RelWithDebInfo and MinSizeRel builds with run-time dispatch).
#   bash tests/isa_symbols.sh <object files of emha_isa_*>
set -euo pipefail
failed=0
for obj in "$@"; do
  variant=$(sed -nE 's|.*/emha_isa_([a-z0-9]+)\.dir/.*|\1|p' <<<"$obj")
  [ -n "$variant" ] || { echo "not a variant object: $obj" >&2; exit 2; }
  # W/V: weak code or data; u: unique global. The personality routine's DW.ref is data.
  leaks=$(nm -C --defined-only "$obj" | awk '$2 ~ /^[WVu]$/ { $1 = ""; $2 = ""; print }' |
          grep -v "isa_$variant" | grep -v 'DW.ref.__gxx_personality_v0' || true)
  if [ -n "$leaks" ]; then
    echo "$obj defines, outside emha's isa_$variant namespaces:" >&2
    echo "$leaks" >&2
    failed=1
  fi
done
[ $failed -eq 0 ] && echo "$# variant objects: no shared out-of-line code"
exit $failed

# SPDX-License-Identifier: Apache-2.0
# Sourced by the bench/icount scripts. trace_count QEMU [OPTION...] PROGRAM [ARG...] prints how
# many instructions one qemu run executed: with -singlestep, qemu's exec log has one "Trace" line
# per executed instruction. The log goes to qemu's stderr, which is counted; the program's own
# output is discarded. Nothing here opens /dev/stdout, which a container may lack or hold as a
# plain file. A run that fails or traces nothing is an error, and says which command it was.
trace_count() {
  local n
  if n=$("$1" -singlestep -d exec,nochain "${@:2}" 2>&1 >/dev/null | grep -c '^Trace') && [ "$n" -gt 0 ]; then
    echo "$n"
  else
    echo "trace_count: no instruction trace from: $*" >&2
    return 1
  fi
}

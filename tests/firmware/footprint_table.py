#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The README's firmware table, rendered from what tests/cross.sh measured.

tests/cross.sh's Cortex-M stages write one line per measurement to a file (tab-separated):
    <core> <build type> flash <probe> <bytes>      footprint probe minus baseline, text + data
    <core> <build type> ram <probe> <bytes>        the same for data + bss
    <core> <build type> stack <entry point> <bytes>   stack_budget.py's worst case
(probes: tests/firmware/footprint.cpp). This prints the table, or compares it with (--check) or
writes it into (--update) the block of a Markdown file between
    <!-- footprint table: tests/firmware/footprint_table.py -->   and   <!-- end -->
"""

import argparse
import sys

BEGIN = "<!-- footprint table: tests/firmware/footprint_table.py -->"
END = "<!-- end -->"
CORES = {  # core: its row's label (the builds tests/cross.sh makes)
    "cortex-m4": "Cortex-M4, -Os",
    "cortex-m7": "Cortex-M7, -O3",
    "cortex-m55": "Cortex-M55, -O3, Helium kernels",
}
COLUMNS = [  # (kind, name, header)
    ("flash", "mha", "flash"),
    ("ram", "mha", "RAM (the object, its arena, port state)"),
    ("stack", "forward", "stack: `forward`"),
    ("stack", "set_weights", "stack: `set_weights`"),
    ("flash", "decoder", "flash: RoPE, RMSNorm, GQA, KvCache decode"),
    ("flash", "t5", "flash: T5 relative bias, RMSNorm"),
    ("flash", "int8", "flash: int8 weights (W8A32)"),
    ("flash", "s8", "flash: full-integer int8"),
    ("ram", "s8", "RAM: full-integer int8"),
    ("stack", "s8_forward", "stack: full-integer `forward`"),
    ("flash", "s16x8", "flash: 16x8"),
    ("ram", "s16x8", "RAM: 16x8"),
    ("stack", "s16x8_forward", "stack: 16x8 `forward`"),
]


def render(lines):
    values = {}
    for line in lines:
        if line.strip():
            core, _build, kind, name, value = line.split("\t")
            values[core, kind, name] = int(value)
    rows = ["| core (build in `tests/cross.sh`) | " + " | ".join(c[2] for c in COLUMNS) + " |",
            "|---|" + "---:|" * len(COLUMNS)]
    for core, label in CORES.items():
        cells = [f"{values[core, kind, name]:,} B" for kind, name, _ in COLUMNS]
        rows.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def split_block(text, path):
    begin = text.find(BEGIN)
    end = text.find(END, begin)
    if begin < 0 or end < 0:
        sys.exit(f"footprint_table.py: no '{BEGIN}' ... '{END}' block in {path}")
    start = begin + len(BEGIN) + 1
    return text[:start], text[start:end], text[end:]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("measured", help="the file tests/cross.sh wrote")
    parser.add_argument("--check", metavar="MARKDOWN", help="exit 1 if its table differs")
    parser.add_argument("--update", metavar="MARKDOWN", help="write the table into it")
    args = parser.parse_args()
    with open(args.measured) as f:
        table = render(f.read().splitlines())
    path = args.check or args.update
    if not path:
        sys.stdout.write(table)
        return 0
    with open(path) as f:
        head, old, tail = split_block(f.read(), path)
    if args.update:
        with open(path, "w") as f:
            f.write(head + table + tail)
        return 0
    if old == table:
        return 0
    sys.stderr.write(f"{path}'s footprint table differs from this build's:\n--- {path}\n{old}"
                     f"--- measured\n{table}to update it: python3 tests/firmware/footprint_table.py "
                     f"{args.measured} --update {path}\n")
    return 1


if __name__ == "__main__":
    sys.exit(main())

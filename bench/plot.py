#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""GFLOP/s of emha and its peers per configuration, with the machine's FMA peaks, as one PNG.

usage: /usr/bin/python3 bench/plot.py --mha BUILD/bench_mha.json [--gemm BUILD/bench_gemm.json]
                                      [--torch BUILD/torch_mha.json] --out BUILD/bench.png

Reads what bench/run.sh wrote: the Google Benchmark JSON of emha_bench_mha and emha_bench_gemm
(medians of the repetitions, their GFLOPS counter; the context's fma_peak_<isa>_gflops entries,
one per instruction set the CPU has) and torch_mha.py's --json (CPU seconds per forward).
Left: MultiHeadAttention::forward per (S, D, H), emha, Eigen and PyTorch. Right: gemm_f32 on the
attention-shaped products, emha, OpenBLAS, Eigen, oneDNN and XNNPACK (those built in). A dashed
line per instruction set's FMA peak; emha's own instruction set is named in the title. Needs python3-matplotlib (Debian).
"""
import argparse
import json
import re

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

MHA_FLOP = lambda s, d: 8 * s * d * d + 4 * s * s * d  # noqa: E731  (bench_mha.cpp's count)
GEMM_SHAPES = ["64x384x128", "128x768x256", "256x1536x512", "128x128x32", "256x256x64", "128x32x128"]


def medians(report):
    """run name -> GFLOPS median (aggregate rows, or single runs without repetitions)."""
    out = {}
    for b in report["benchmarks"]:
        if b.get("aggregate_name", "median") != "median" or "GFLOPS" not in b:
            continue
        out[b.get("run_name", b["name"])] = b["GFLOPS"]
    return out


def peaks(report):
    """instruction set -> FMA peak GFLOP/s, from the context."""
    ctx = report["context"]
    found = {}
    for key, value in ctx.items():
        m = re.fullmatch(r"fma_peak_(.+)_gflops", key)
        if m and m.group(1) not in ("best", "median"):
            found[m.group(1)] = float(value)
    return found


def bars(ax, labels, series, peak_lines, title):
    width = 0.8 / max(len(series), 1)
    for i, (name, values) in enumerate(series.items()):
        xs = [j + (i - (len(series) - 1) / 2) * width for j in range(len(labels))]
        ax.bar(xs, [v if v is not None else 0 for v in values], width, label=name)
    # One dashed line per distinct peak; instruction sets within 3% of each other share it (on a
    # Zen 4 AVX2 and AVX-512 peak alike, on a Zen 5 AVX-512's is twice).
    groups = []
    for isa, gflops in sorted(peak_lines.items(), key=lambda kv: -kv[1]):
        if groups and gflops >= 0.97 * groups[-1][1]:
            groups[-1][0].append(isa)
        else:
            groups.append(([isa], gflops))
    for isas, gflops in groups:
        ax.axhline(gflops, linestyle="--", linewidth=1, color="grey")
        ax.text(-0.5, gflops, f" {' = '.join(isas)} FMA peak {gflops:.0f}", va="bottom", ha="left", fontsize=8)
    top = max([g for _, g in groups] + [v for vals in series.values() for v in vals if v is not None])
    ax.set_ylim(0, top * 1.3)  # room above the peak line for the legend
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("GFLOP/s (1 core)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="upper right", ncol=3)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mha", required=True)
    ap.add_argument("--gemm")
    ap.add_argument("--torch")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    mha = json.load(open(args.mha))
    mha_g = medians(mha)
    peak_lines = peaks(mha)
    isa = mha["context"].get("emha_simd_isa", "?")
    configs = sorted({m.group(1) for m in (re.match(r"mha_forward/(S:\d+/D:\d+/H:\d+)/", n) for n in mha_g) if m},
                     key=lambda c: [int(x) for x in re.findall(r"\d+", c)])
    torch_us = json.load(open(args.torch)) if args.torch else {}
    series = {"emha": [mha_g.get(f"mha_forward/{c}/emha") for c in configs],
              "Eigen": [mha_g.get(f"mha_forward/{c}/eigen") for c in configs]}
    if torch_us:
        def torch_gflops(c):
            s, d, _ = (int(x) for x in re.findall(r"\d+", c))
            t = torch_us.get(c)
            return MHA_FLOP(s, d) / t * 1e-9 if t else None
        series["PyTorch"] = [torch_gflops(c) for c in configs]

    panels = 2 if args.gemm else 1
    fig, axes = plt.subplots(1, panels, figsize=(6 * panels, 4.5), squeeze=False)
    bars(axes[0][0], configs, series, peak_lines, f"MultiHeadAttention::forward, batch 1 (emha: {isa})")
    if args.gemm:
        gemm = json.load(open(args.gemm))
        gemm_g = medians(gemm)
        rows = [n.rsplit("/", 1)[0] for n in gemm_g if n.endswith("/emha") and n.split("/")[2] in GEMM_SHAPES]
        rows = sorted(set(rows), key=lambda r: (r.split("/")[1], GEMM_SHAPES.index(r.split("/")[2])))
        impls = ("emha", "openblas", "eigen", "onednn", "xnnpack")
        gseries = {impl: [gemm_g.get(f"{r}/{impl}") for r in rows] for impl in impls}
        gseries = {k: v for k, v in gseries.items() if any(x is not None for x in v)}
        bars(axes[0][1], [r.split("/", 1)[1] for r in rows], gseries, peaks(gemm) or peak_lines,
             "gemm_f32, attention shapes")
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"plot: {args.out}")


if __name__ == "__main__":
    main()

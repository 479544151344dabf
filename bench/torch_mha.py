#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""PyTorch's nn.MultiheadAttention timed beside emha's C++ benchmark binary, in one run.

usage: /usr/bin/python3 bench/torch_mha.py BUILD/bench/emha_bench_mha [--repetitions N] [--min-time S]

Per config (S, D, H) = (32,64,4) (64,128,4) (128,256,8) (256,512,8), batch 1, self-attention,
1 thread everywhere, it prints median CPU microseconds per forward: emha and the Eigen peer (from
the binary's --benchmark_format=json medians of cpu_time), torch (nn.MultiheadAttention(D, H, batch_first=True),
eval(), torch.inference_mode(), forward(x, x, x, need_weights=False): what a user gets by default,
Python call overhead included; time.process_time(), the process's CPU time), and the speedups torch/emha and eigen/emha (> 1: emha is faster).
Which torch path ran (the fused fast path, aten::_native_multi_head_attention, or the composite
one) is read from the profiler, not assumed. Torch is timed in two halves around the binary so
that both see the same machine. CPU time, not wall time, on both sides: on a shared machine it
leaves out the time a process was preempted (bench/README.md); a torch CPU/wall ratio above 1.2
(more than one busy thread) is flagged.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

# Single-threaded torch: its BLAS (Debian: pthread OpenBLAS) reads this at load time.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
import torch  # noqa: E402

CONFIGS = [(32, 64, 4), (64, 128, 4), (128, 256, 8), (256, 512, 8)]  # (S, D, H)


def bench_name(s, d, h, impl):
    return f"mha_forward/S:{s}/D:{d}/H:{h}/{impl}"


def torch_path(mha, x):
    """Which implementation torch ran for one call: 'fast path' or 'composite path'."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        mha(x, x, x, need_weights=False)
    ops = {e.key for e in prof.key_averages()}
    return "fast path (aten::_native_multi_head_attention)" if "aten::_native_multi_head_attention" in ops \
        else "composite path (F.multi_head_attention_forward)"


def time_torch(mha, x, repetitions, min_time):
    """Per-call CPU seconds of `repetitions` runs of >= min_time each, and the CPU/wall ratio."""
    def call():
        mha(x, x, x, need_weights=False)
    for _ in range(3):  # warm-up
        call()
    n = 1
    while True:  # calibrate: n calls take at least min_time
        t0 = time.perf_counter()
        for _ in range(n):
            call()
        if time.perf_counter() - t0 >= min_time:
            break
        n *= 2
    times, cpu, wall = [], 0.0, 0.0
    for _ in range(repetitions):
        c0, t0 = time.process_time(), time.perf_counter()
        for _ in range(n):
            call()
        t1, c1 = time.perf_counter(), time.process_time()
        times.append((c1 - c0) / n)
        cpu, wall = cpu + c1 - c0, wall + t1 - t0
    return times, cpu / wall


def run_binary(binary, repetitions, min_time):
    """Median CPU seconds per call of every benchmark of the binary, by name."""
    cmd = [binary, "--benchmark_format=json", f"--benchmark_repetitions={repetitions}",
           f"--benchmark_min_time={min_time}", "--benchmark_enable_random_interleaving=true",
           "--benchmark_report_aggregates_only=true"]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"{binary} failed with status {proc.returncode}")
    report = json.loads(proc.stdout)
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    medians = {}
    for b in report["benchmarks"]:
        if b.get("aggregate_name") == "median":
            medians[b["run_name"]] = b["cpu_time"] * scale[b["time_unit"]]
    peak = report["context"].get("fma_peak_gflops", "?")
    return medians, peak


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary", help="path to emha_bench_mha")
    ap.add_argument("--repetitions", type=int, default=10, help="repetitions per implementation")
    ap.add_argument("--min-time", type=float, default=0.1, help="seconds per repetition")
    ap.add_argument("--json", help="also write the medians here: {'S:32/D:64/H:4': torch seconds, ...}")
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(0)
    models = []
    with torch.inference_mode():
        for s, d, h in CONFIGS:
            mha = torch.nn.MultiheadAttention(d, h, batch_first=True).eval()
            models.append((mha, torch.randn(1, s, d)))
        paths = [torch_path(m, x) for m, x in models]

        half = max(args.repetitions // 2, 1)
        torch_times = [[] for _ in CONFIGS]
        cpu_ratio = [0.0 for _ in CONFIGS]
        for i, (m, x) in enumerate(models):  # first half
            t, r = time_torch(m, x, half, args.min_time)
            torch_times[i] += t
            cpu_ratio[i] = r
        medians, peak = run_binary(args.binary, args.repetitions, args.min_time)
        for i, (m, x) in enumerate(models):  # second half
            t, r = time_torch(m, x, args.repetitions - half if args.repetitions > 1 else 1, args.min_time)
            torch_times[i] += t
            cpu_ratio[i] = max(cpu_ratio[i], r)

    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread, batch_first=True, eval, "
          f"inference_mode, need_weights=False; emha FMA peak {float(peak):.1f} GFLOP/s")
    print(f"medians of {args.repetitions} repetitions x >= {args.min_time} s, CPU microseconds per forward\n")
    print(f"{'S':>4} {'D':>4} {'H':>2} {'emha us':>9} {'torch us':>9} {'eigen us':>9} "
          f"{'torch/emha':>11} {'eigen/emha':>11}  torch path")
    for (s, d, h), times, path, ratio in zip(CONFIGS, torch_times, paths, cpu_ratio):
        t_torch = statistics.median(times)
        t_emha = medians.get(bench_name(s, d, h, "emha"))
        t_eigen = medians.get(bench_name(s, d, h, "eigen"))
        us = lambda t: f"{t * 1e6:9.1f}" if t else f"{'n/a':>9}"  # noqa: E731
        speed = lambda t: f"{t / t_emha:10.2f}x" if t and t_emha else f"{'n/a':>11}"  # noqa: E731
        note = f" (torch CPU/wall {ratio:.2f}: more than one thread?)" if ratio > 1.2 else ""
        print(f"{s:4d} {d:4d} {h:2d} {us(t_emha)} {us(t_torch)} {us(t_eigen)} "
              f"{speed(t_torch)} {speed(t_eigen)}  {path}{note}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({f"S:{s}/D:{d}/H:{h}": statistics.median(t) for (s, d, h), t in zip(CONFIGS, torch_times)}, f)


if __name__ == "__main__":
    main()

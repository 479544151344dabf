#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""PyTorch's decode step, done the way HF and torchscale do it, beside emha_bench_decode, one run.

usage: /usr/bin/python3 bench/torch_decode.py BUILD/bench/emha_bench_decode [--repetitions N]

Per (D, H, kv_heads) = (512, 8, 8) (512, 8, 2) (1024, 16, 4) and cache length L = 128, 512, 2048,
batch 1, one thread, torch.inference_mode(): the new token x [1, 1, D] through nn.Linear q/k/v
projections (k, v: kv_heads * d_k wide, biases on), k and v written at position L of a
preallocated cache [1, kv_heads, L + 1, d_k] (HF StaticCache's layout), attention of q over the
L + 1 cached keys (K/V heads repeated with repeat_interleave for GQA, as HF's repeat_kv), softmax,
P V, out_proj. Median CPU microseconds per step (time.process_time over batches of calls). Torch is
timed before the binary runs; the binary's JSON medians give emha's step, its full-prefix
forward, and the read-bandwidth loop. Prints one table: emha and torch steps, the speed-up
torch/emha, emha's GB/s and its fraction of the same-size read loop.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

CONFIGS = [(512, 8, 8), (512, 8, 2), (1024, 16, 4)]  # (D, H, kv_heads)
LENGTHS = [128, 512, 2048]


class DecodeStep(nn.Module):
    def __init__(self, d, h, kv, length):
        super().__init__()
        self.h, self.kv, self.dk, self.len = h, kv, d // h, length
        self.q_proj = nn.Linear(d, d)
        self.k_proj = nn.Linear(d, kv * self.dk)
        self.v_proj = nn.Linear(d, kv * self.dk)
        self.o_proj = nn.Linear(d, d)
        self.k_cache = torch.randn(1, kv, length + 1, self.dk)
        self.v_cache = torch.randn(1, kv, length + 1, self.dk)

    def forward(self, x):  # x [1, 1, D]: the token at position self.len
        q = self.q_proj(x).view(1, 1, self.h, self.dk).transpose(1, 2)
        k = self.k_proj(x).view(1, 1, self.kv, self.dk).transpose(1, 2)
        v = self.v_proj(x).view(1, 1, self.kv, self.dk).transpose(1, 2)
        self.k_cache[:, :, self.len:self.len + 1] = k
        self.v_cache[:, :, self.len:self.len + 1] = v
        keys, values = self.k_cache, self.v_cache
        if self.kv != self.h:
            keys = keys.repeat_interleave(self.h // self.kv, dim=1)
            values = values.repeat_interleave(self.h // self.kv, dim=1)
        scores = torch.matmul(q, keys.transpose(-2, -1)) * self.dk ** -0.5
        out = torch.matmul(torch.softmax(scores, dim=-1), values)
        return self.o_proj(out.transpose(1, 2).reshape(1, 1, -1))


def time_step(step, x, repetitions):
    with torch.inference_mode():
        for _ in range(10):
            step(x)
        calls = 1
        while True:  # batches of >= 20 ms
            t = time.process_time()
            for _ in range(calls):
                step(x)
            if time.process_time() - t >= 0.02:
                break
            calls *= 2
        samples = []
        for _ in range(repetitions):
            t = time.process_time()
            for _ in range(calls):
                step(x)
            samples.append((time.process_time() - t) / calls)
    return statistics.median(samples)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("binary")
    p.add_argument("--repetitions", type=int, default=9)
    p.add_argument("--min-time", type=float, default=0.05, help="seconds per emha repetition")
    args = p.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    torch_us = {}
    for d, h, kv in CONFIGS:
        for length in LENGTHS:
            step = DecodeStep(d, h, kv, length).eval()
            torch_us[(d, h, kv, length)] = 1e6 * time_step(step, torch.randn(1, 1, d), args.repetitions)
    out = subprocess.run([args.binary, f"--benchmark_repetitions={args.repetitions}",
                          "--benchmark_enable_random_interleaving=true",
                          "--benchmark_report_aggregates_only=true", f"--benchmark_min_time={args.min_time}",
                          "--benchmark_format=json"], check=True, capture_output=True, text=True)
    # Medians of the repetitions; with one repetition Google Benchmark reports the run alone.
    runs = json.loads(out.stdout)["benchmarks"]
    medians = {b["run_name"]: b for b in runs
               if b.get("aggregate_name") == "median" or (args.repetitions == 1 and b.get("run_type") == "iteration")}
    print(f"torch {torch.__version__}, 1 thread; emha: {args.binary}, medians of {args.repetitions}")
    print("| D, H, kv | cached | emha step µs | torch step µs | torch / emha | emha full prefix µs "
          "| prefix / step | emha GB/s | read loop GB/s | fraction |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for d, h, kv in CONFIGS:
        for length in LENGTHS:
            name = f"decode/D:{d}/H:{h}/KV:{kv}/len:{length}"
            s, pre, rd = medians[name + "/emha"], medians[name + "/prefix"], medians[name + "/read"]
            t = torch_us[(d, h, kv, length)]
            print(f"| {d}, {h}, {kv} | {length} | {s['cpu_time']:.1f} | {t:.1f} | {t / s['cpu_time']:.2f} "
                  f"| {pre['cpu_time']:.0f} | {pre['cpu_time'] / s['cpu_time']:.0f} | {s['GBps']:.1f} "
                  f"| {rd['GBps']:.1f} | {s['GBps'] / rd['GBps']:.0%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

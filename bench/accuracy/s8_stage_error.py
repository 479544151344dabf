#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Which stages of the full-integer attention layer lose the most at int8, and which would need
int16 (a 16x8 layer: int16 activations, int8 weights, zero points 0, as TFLite's and CMSIS-NN's
16x8 kernels): each stage's quantization simulated alone, in float64, on the float module's graph
(torch.nn.MultiheadAttention's math, as tests/attention/gen_s8_fixtures.py lays it out).

Stages: the input; the weights (int8 per output channel, symmetric, in every row); Q, K, V; the
scores (after the scale); the probabilities (int8: scale 1/256, zero point -128, as TFLite's
softmax; int16: 1/32768, 0, as its int16 softmax); the context; the output. Activations int8 are
asymmetric per tensor on a calibration run's range (TFLite's post-training quantization), int16
symmetric (zero point 0, scale max |x| / 32767).

For each module (seeded Gaussian weights; inputs N(0, 1); a second module whose attention is
peaked: Q, K, V weights 3x larger; the first again over 256 keys), it prints the output error
rms(y - y_float64) / rms(y_float64) over 8 test sequences of: every stage int8 (the s8 layer);
every activation int16 with int8 weights (16x8); one stage int8 with the rest exact; every
stage int8 but one at int16. Deterministic; numpy only, a few seconds:

    /usr/bin/python3 bench/accuracy/s8_stage_error.py
"""
import math

import numpy as np

STAGES = ("input", "weights", "q", "k", "v", "scores", "probs", "context", "out")


def fake(x, lo, hi, bits):
    """x quantized and back: int8 asymmetric on [lo, hi] (widened to hold 0); int16 symmetric."""
    if bits == 16:
        s = max(abs(lo), abs(hi)) / 32767.0
        return np.clip(np.round(x / s), -32767, 32767) * s
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    s = (hi - lo) / 255.0
    z = -128 - round(lo / s)
    return (np.clip(np.round(x / s) + z, -128, 127) - z) * s


def fake_weight(w):
    s = np.abs(w).max(axis=1, keepdims=True) / 127.0
    return np.clip(np.round(w / s), -127, 127) * s


def forward(w, x, heads, bits, ranges):
    """The layer on x [S, d] with stage st quantized to bits[st] (0: exact); returns the output and
    every stage's values (for calibration)."""
    seen = {}

    def q(name, t):
        seen[name] = t
        b = bits.get(name, 0)
        if not b:
            return t
        if name == "probs":  # TFLite's fixed output parameters
            return np.round(t * 256.0) / 256.0 if b == 8 else np.round(t * 32768.0) / 32768.0
        return fake(t, *ranges[name], b)

    wt = {k: (fake_weight(v) if bits.get("weights") and k.startswith("w") else v) for k, v in w.items()}
    x = q("input", x)
    d, n = x.shape[1], x.shape[0]
    dk = d // heads
    Q = q("q", x @ wt["wq"].T + w["bq"])
    K = q("k", x @ wt["wk"].T + w["bk"])
    V = q("v", x @ wt["wv"].T + w["bv"])
    ctx = np.zeros((n, d))
    scores = np.zeros((heads, n, n))
    for h in range(heads):
        c = slice(h * dk, (h + 1) * dk)
        scores[h] = Q[:, c] @ K[:, c].T / math.sqrt(dk)
    scores = q("scores", scores)
    e = np.exp(scores - scores.max(axis=2, keepdims=True))
    p = q("probs", e / e.sum(axis=2, keepdims=True))
    for h in range(heads):
        c = slice(h * dk, (h + 1) * dk)
        ctx[:, c] = p[h] @ V[:, c]
    ctx = q("context", ctx)
    out = q("out", ctx @ wt["wo"].T + w["bo"])
    return out, seen


def study(name, d, heads, seq, gain, rng):
    w = {k: rng.normal(0, gain / math.sqrt(d), (d, d)) for k in ("wq", "wk", "wv")}
    w["wo"] = rng.normal(0, 1 / math.sqrt(d), (d, d))
    w.update({b: rng.normal(0, 0.1, d) for b in ("bq", "bk", "bv", "bo")})
    calib = [rng.normal(0, 1, (seq, d)) for _ in range(16)]
    ranges = {}
    for x in calib:
        for k, t in forward(w, x, heads, {}, {})[1].items():
            lo, hi = ranges.get(k, (np.inf, -np.inf))
            ranges[k] = (min(lo, float(t.min())), max(hi, float(t.max())))
    tests = [rng.normal(0, 1, (seq, d)) for _ in range(8)]
    truth = [forward(w, x, heads, {}, ranges)[0] for x in tests]
    rms = float(np.sqrt(np.mean(np.concatenate([t.ravel() for t in truth]) ** 2)))

    def err(bits):
        diff = np.concatenate([(forward(w, x, heads, bits, ranges)[0] - t).ravel() for x, t in zip(tests, truth)])
        return float(np.sqrt(np.mean(diff ** 2))) / rms

    all8 = {s: 8 for s in STAGES}
    lo, hi = ranges["scores"]
    print(f"{name}: d_model {d}, heads {heads}, S {seq}; scores in [{lo:.1f}, {hi:.1f}]; "
          f"output error rms(y - y_f64) / rms(y_f64)")
    print(f"  every stage int8 (the s8 layer): {err(all8):.4f}; every activation int16, weights int8 "
          f"(16x8): {err(dict({s: 16 for s in STAGES}, weights=8)):.4f}")
    print(f"  {'stage':8} {'alone at int8':>14} {'s8 with this stage int16':>26}")
    for s in STAGES[:1] + STAGES[2:]:
        print(f"  {s:8} {err({s: 8}):14.4f} {err(dict(all8, **{s: 16})):26.4f}")
    print(f"  {'weights':8} {err({'weights': 8}):14.4f} {'(int8 in both layers)':>26}")


def main():
    rng = np.random.default_rng(20261126)
    study("diffuse attention", 64, 4, 32, 1.0, rng)
    study("peaked attention", 64, 4, 32, 3.0, rng)
    study("diffuse attention, long rows", 64, 4, 256, 1.0, rng)


if __name__ == "__main__":
    main()

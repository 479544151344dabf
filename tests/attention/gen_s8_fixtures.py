# SPDX-License-Identifier: Apache-2.0
"""Generate tests/attention/fixtures/s8_layer.hpp: the full-integer int8 attention layer, every
output byte computed by a NumPy/Python re-implementation of TFLite's reference int8 kernels, never
from emha's code:

  FULLY_CONNECTED per channel   tensorflow/lite/kernels/internal/reference/integer_ops/fully_connected.h
  BATCH_MATMUL int8             tensorflow/lite/kernels/internal/reference/batch_matmul.h, called as
                                tensorflow/lite/micro/kernels/batch_matmul.cc calls it (tflite-micro d138bfc)
  SOFTMAX int8                  tensorflow/lite/kernels/internal/reference/softmax.h with
                                softmax_common.cc's parameters (PreprocessSoftmaxScaling,
                                CalculateInputRadius), over gemmlowp's fixedpoint.h
  QuantizeMultiplier, MultiplyByQuantizedMultiplier (both roundings): quantization_util.cc, common.h
(the Python of those lives in tests/kernels/gen_{requant,softmax_s8,matmul_s8}_fixtures.py).

The graph is torch.nn.MultiheadAttention's forward as a TFLite converter lays it out:
  Q, K, V = FULLY_CONNECTED(query, key, value); per head h (K/V head h // (heads / kv_heads)):
  S = BATCH_MATMUL(Q_h, K_h^T) with the score scale folded into its multiplier; P = SOFTMAX(S)
  over the row's unmasked keys (masked keys: probability 0, i.e. -128); C_h = BATCH_MATMUL(P, V_h);
  out = FULLY_CONNECTED(C).
Calibration as TFLite's post-training quantization: each activation's range over a set of
calibration inputs run through the float64 module (min <= 0 <= max, scale = (max - min) / 255,
zero point -128 - round(min / scale)); weights symmetric per output channel (amax / 127), biases
int32 at s_x s_w. The fixture stores what emha's exporter would: int8 weights, biases with the
input zero point folded in (bias - z_x * row sums), (multiplier, shift) pairs, zero points.
Each case also carries the float64 module's output on the float input, so the test can print the
int8 layer's error against the truth, and the error of PyTorch's own fake quantization of the same
graph on the same calibration (torch.fake_quantize_per_tensor_affine / _per_channel_affine, the
ops torch.ao.quantization's FakeQuantize runs, at every stage boundary, in float32) beside it.

    /usr/bin/python3 tests/attention/gen_s8_fixtures.py      (from the repository root)

Deterministic; overwrites only tests/attention/fixtures/s8_layer.hpp.
"""
import math
import pathlib
import sys

import numpy as np

sys.dont_write_bytecode = True
HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "kernels"))
from gen_requant_fixtures import c_array, quantize_multiplier  # noqa: E402
from gen_matmul_s8_fixtures import batch_matmul_op, fully_connected_per_channel  # noqa: E402
from gen_softmax_s8_fixtures import params as softmax_params, softmax_s8  # noqa: E402

OUT = HERE / "fixtures" / "s8_layer.hpp"

CASES = [
    # name, d_model, heads, kv_heads, head_dim, kdim, vdim, S_q, S_kv, batch, layout, masks, single, bias
    dict(name="self_mha", d=32, heads=4, kv_heads=4, head_dim=8, kdim=32, vdim=32, sq=8, skv=8, batch=2,
         seq_first=False, masks="none", single=False, bias=True),
    dict(name="gqa_causal_padding", d=32, heads=4, kv_heads=2, head_dim=16, kdim=32, vdim=32, sq=9, skv=9, batch=2,
         seq_first=True, masks="causal_padding", single=True, bias=True),
    dict(name="cross_masked", d=24, heads=2, kv_heads=2, head_dim=12, kdim=16, vdim=20, sq=5, skv=11, batch=1,
         seq_first=False, masks="per_head", single=False, bias=False),
]


def tensor_params(lo, hi):
    """TFLite's asymmetric int8 (scale, zero point) of a range (nudged to hold 0)."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = (hi - lo) / 255.0
    zp = int(np.clip(-128 - round(lo / scale), -128, 127))
    return scale, zp


def quantize(x, scale, zp):
    return np.clip(np.round(x / scale) + zp, -128, 127).astype(np.int64)


def mask_of(c, rng):
    """[batch, heads, S_q, S_kv] True = masked, and the C++ masks that say it."""
    b, h, sq, skv = c["batch"], c["heads"], c["sq"], c["skv"]
    m = np.zeros((b, h, sq, skv), dtype=bool)
    extra = {}
    if c["masks"] == "causal_padding":
        m |= np.triu(np.ones((sq, skv), dtype=bool), 1)[None, None]
        ignored = np.zeros((b, skv), dtype=bool)
        ignored[1, [2, 7, 8]] = True
        m |= ignored[:, None, None, :]
        extra["key_ignored"] = ignored
    elif c["masks"] == "per_head":
        am = rng.random((h, sq, skv)) < 0.3
        am[1, 2, :] = True  # a row with every key masked: it attends to nothing
        m |= am[None]
        extra["attn_masked"] = am
    return m, extra


def float_module(c, w, x_q, x_k, x_v, mask):
    """torch.nn.MultiheadAttention's eval forward in float64 (per head, GQA by repeat_interleave);
    also returns every stage's tensor for calibration."""
    hd, g = c["head_dim"], c["heads"] // c["kv_heads"]
    q = x_q @ w["wq"].T + w["bq"]
    k = x_k @ w["wk"].T + w["bk"]
    v = x_v @ w["wv"].T + w["bv"]
    scale = 1.0 / math.sqrt(hd)
    ctx = np.zeros((x_q.shape[0], c["heads"] * hd))
    scores_seen = []
    for h in range(c["heads"]):
        kh = k[:, (h // g) * hd:(h // g + 1) * hd]
        vh = v[:, (h // g) * hd:(h // g + 1) * hd]
        s = (q[:, h * hd:(h + 1) * hd] @ kh.T) * scale
        scores_seen.append(s[~mask[h]])
        s = np.where(mask[h], -np.inf, s)
        mx = np.max(s, axis=1, keepdims=True)
        e = np.where(mask[h], 0.0, np.exp(s - np.where(np.isfinite(mx), mx, 0.0)))
        tot = e.sum(axis=1, keepdims=True)
        p = np.divide(e, tot, out=np.zeros_like(e), where=tot > 0)
        ctx[:, h * hd:(h + 1) * hd] = p @ vh
    out = ctx @ w["wo"].T + w["bo"]
    return out, dict(q=q, k=k, v=v, scores=np.concatenate(scores_seen), context=ctx, out=out)


def torch_fake_quant(c, w, tp, x_q, x_k, x_v, mask):
    """The graph in float32 with torch's fake quantization at each int8 boundary (the simulation
    torch.ao.quantization trains and calibrates with): inputs, weights per channel, Q, K, V,
    scores, probabilities (1/256, -128), context, output. None without torch."""
    try:
        import torch
    except ImportError:
        return None
    t = lambda a: torch.tensor(a, dtype=torch.float32)  # noqa: E731

    def fq(x, name):
        s, z = tp[name]
        return torch.fake_quantize_per_tensor_affine(x, float(s), int(z), -128, 127)

    def fq_w(wf):
        wt = t(wf)
        s = wt.abs().amax(dim=1) / 127.0
        return torch.fake_quantize_per_channel_affine(wt, s, torch.zeros(len(s), dtype=torch.int32), 0, -127, 127)

    hd, g = c["head_dim"], c["heads"] // c["kv_heads"]
    q = fq(fq(t(x_q), "query") @ fq_w(w["wq"]).T + t(w["bq"]), "q")
    k = fq(fq(t(x_k), "key") @ fq_w(w["wk"]).T + t(w["bk"]), "k")
    v = fq(fq(t(x_v), "value") @ fq_w(w["wv"]).T + t(w["bv"]), "v")
    ctx = torch.zeros(x_q.shape[0], c["heads"] * hd)
    for h in range(c["heads"]):
        kv = slice((h // g) * hd, (h // g + 1) * hd)
        s = fq((q[:, h * hd:(h + 1) * hd] @ k[:, kv].T) / math.sqrt(hd), "scores")
        s = s.masked_fill(t(mask[h]).bool(), float("-inf"))
        p = torch.nan_to_num(torch.softmax(s, dim=-1), nan=0.0)
        p = torch.fake_quantize_per_tensor_affine(p, 1.0 / 256, -128, -128, 127)
        ctx[:, h * hd:(h + 1) * hd] = p @ v[:, kv]
    out = fq(fq(ctx, "context") @ fq_w(w["wo"]).T + t(w["bo"]), "out")
    return out.double().numpy()


def per_channel(wf):
    s = np.abs(wf).max(axis=1) / 127.0
    return np.clip(np.round(wf / s[:, None]), -127, 127).astype(np.int64), s


def module_and_inputs(c, rng):
    """A case's seeded float64 weights, its mask, and a function drawing one input (query, key,
    value: one tensor three times for self-attention)."""
    d, kvd, qd = c["d"], c["kv_heads"] * c["head_dim"], c["heads"] * c["head_dim"]
    w = dict(wq=rng.normal(0, 1 / math.sqrt(d), (qd, d)), wk=rng.normal(0, 1 / math.sqrt(c["kdim"]), (kvd, c["kdim"])),
             wv=rng.normal(0, 1 / math.sqrt(c["vdim"]), (kvd, c["vdim"])), wo=rng.normal(0, 1 / math.sqrt(qd), (d, qd)))
    for n, rows in (("bq", qd), ("bk", kvd), ("bv", kvd), ("bo", d)):
        w[n] = rng.normal(0, 0.1, rows) if c["bias"] else np.zeros(rows)
    self_attn = c["kdim"] == d and c["sq"] == c["skv"] and c["masks"] != "per_head"
    mask, extra = mask_of(c, rng)

    def inputs(r):
        xq = r.normal(0.2, 1.0, (c["batch"], c["sq"], d))
        if self_attn:
            return xq, xq, xq
        return xq, r.normal(-0.1, 0.8, (c["batch"], c["skv"], c["kdim"])), r.normal(0, 1.2, (c["batch"], c["skv"], c["vdim"]))

    return w, mask, extra, self_attn, inputs


def calibrate(c, w, mask, inputs, rng, draws):
    """Each stage's (min, max) over `draws` draws of every sequence through the float module."""
    ranges = {}
    for _ in range(draws):
        xq, xk, xv = inputs(rng)
        for b in range(c["batch"]):
            _, st = float_module(c, w, xq[b], xk[b], xv[b], mask[b])
            st.update(query=xq[b], key=xk[b], value=xv[b])
            for n, t in st.items():
                lo, hi = ranges.get(n, (np.inf, -np.inf))
                ranges[n] = (min(lo, float(t.min())), max(hi, float(t.max())))
    return ranges


def build(c, rng):
    d, hd, qd = c["d"], c["head_dim"], c["heads"] * c["head_dim"]
    w, mask, extra, self_attn, inputs = module_and_inputs(c, rng)
    ranges = calibrate(c, w, mask, inputs, rng, 8)
    tp = {n: tensor_params(*r) for n, r in ranges.items()}
    if self_attn:
        tp["key"] = tp["value"] = tp["query"]
    single = c["single"]

    def projection(wf, bf, x_name, y_name):
        wq, sw = per_channel(wf)
        sx, zx = tp[x_name]
        sy, _ = tp[y_name]
        bias = np.round(bf / (sx * sw)).astype(np.int64)
        mults = [quantize_multiplier(sx * s / sy, single) for s in sw]
        return wq, bias, mults

    P = dict(q=projection(w["wq"], w["bq"], "query", "q"), k=projection(w["wk"], w["bk"], "key", "k"),
             v=projection(w["wv"], w["bv"], "value", "v"), out=projection(w["wo"], w["bo"], "context", "out"))
    scale = 1.0 / math.sqrt(hd)
    m_scores = quantize_multiplier(tp["q"][0] * tp["k"][0] * scale / tp["scores"][0], single)
    sm = softmax_params(1.0, tp["scores"][0], single)
    m_context = quantize_multiplier(tp["v"][0] / 256.0 / tp["context"][0], single)

    # The test input: one more draw, quantized; the truth is the float module on the float input.
    xq, xk, xv = inputs(rng)
    qin = {n: quantize(x, *tp[n]) for n, x in (("query", xq), ("key", xk), ("value", xv))}
    truth = np.stack([float_module(c, w, xq[b], xk[b], xv[b], mask[b])[0] for b in range(c["batch"])])

    # The int8 graph, TFLite's reference kernels.
    z = {n: tp[n][1] for n in tp}
    out = np.zeros((c["batch"], c["sq"], d), dtype=np.int64)
    probs = np.full((c["batch"], c["heads"], c["sq"], c["skv"]), -128, dtype=np.int64)
    g = c["heads"] // c["kv_heads"]
    for b in range(c["batch"]):
        Q = fully_connected_per_channel(qin["query"][b], P["q"][0], P["q"][1], P["q"][2], z["query"], z["q"], single)
        K = fully_connected_per_channel(qin["key"][b], P["k"][0], P["k"][1], P["k"][2], z["key"], z["k"], single)
        V = fully_connected_per_channel(qin["value"][b], P["v"][0], P["v"][1], P["v"][2], z["value"], z["v"], single)
        C = np.zeros((c["sq"], qd), dtype=np.int64)
        for h in range(c["heads"]):
            kv = slice((h // g) * hd, (h // g + 1) * hd)
            S = batch_matmul_op(Q[:, h * hd:(h + 1) * hd], K[:, kv], z["q"], z["k"], *m_scores, z["scores"], single)
            for i in range(c["sq"]):
                keep = [j for j in range(c["skv"]) if not mask[b, h, i, j]]
                if keep:
                    p = softmax_s8([int(S[i, j]) for j in keep], sm, single)
                    probs[b, h, i, keep] = p
            Pm = probs[b, h]
            C[:, h * hd:(h + 1) * hd] = batch_matmul_op(Pm, V[:, kv].T, -128, z["v"], *m_context, z["context"], single)
        out[b] = fully_connected_per_channel(C, P["out"][0], P["out"][1], P["out"][2], z["context"], z["out"], single)

    fake = [torch_fake_quant(c, w, tp, xq[b], xk[b], xv[b], mask[b]) for b in range(c["batch"])]
    fake_err = None if fake[0] is None else float(np.abs(np.stack(fake) - truth).max())
    # Sanity: the int8 output dequantized is near the float truth (a misread stage would not be).
    so, zo = tp["out"]
    err = np.abs((out - zo) * so - truth)
    assert err.max() < 0.25 * (ranges["out"][1] - ranges["out"][0]), err.max()
    lay = (lambda t: np.transpose(t, (1, 0, 2))) if c["seq_first"] else (lambda t: t)
    return dict(c=c, P=P, z=z, tp=tp, m_scores=m_scores, sm=sm, m_context=m_context, qin={n: lay(t) for n, t in qin.items()},
                out=lay(out), probs=probs, truth=lay(truth), extra=extra, self_attn=self_attn, fake_err=fake_err)


def emit(r):
    c, P, z = r["c"], r["P"], r["z"]
    lines = [f"namespace {c['name']} {{"]
    for k in ("d", "heads", "kv_heads", "head_dim", "kdim", "vdim", "sq", "skv", "batch"):
        lines.append(f"inline constexpr std::size_t {k} = {c[k]};")
    lines.append(f"inline constexpr bool seq_first = {str(c['seq_first']).lower()};")
    lines.append(f"inline constexpr bool single_rounding = {str(c['single']).lower()};")
    lines.append(f"inline constexpr bool self_attention = {str(r['self_attn']).lower()};")
    for n in ("q", "k", "v", "out"):
        wq, bias, mults = P[n]
        zx = z[{"q": "query", "k": "key", "v": "value", "out": "context"}[n]]
        folded = bias - zx * wq.sum(axis=1)
        lines += c_array(f"{n}_weight", [int(v) for v in wq.ravel()], "std::int8_t")
        lines += c_array(f"{n}_bias", [int(v) for v in folded], "std::int32_t")
        lines += c_array(f"{n}_multiplier", [f"{{{m}, {s}}}" for m, s in mults], "emha::QuantizedMultiplier")
    for n in ("query", "key", "value", "q", "k", "v", "scores", "context", "out"):
        lines.append(f"inline constexpr std::int32_t zero_point_{n} = {z[n]};")
    lines.append(f"inline constexpr emha::QuantizedMultiplier scores_multiplier{{{r['m_scores'][0]}, {r['m_scores'][1]}}};")
    lines.append(f"inline constexpr emha::QuantizedMultiplier context_multiplier{{{r['m_context'][0]}, {r['m_context'][1]}}};")
    lines.append(f"inline constexpr emha::SoftmaxS8Params softmax{{{r['sm'][0]}, {r['sm'][1]}, {r['sm'][2]}}};")
    lines.append(f"inline constexpr double out_scale = {r['tp']['out'][0]!r};")
    lines.append("// max |torch fake-quant graph - float64 module| (torch.fake_quantize_*, float32; -1: no torch)")
    lines.append(f"inline constexpr double torch_fake_quant_error = {r['fake_err'] if r['fake_err'] is not None else -1.0!r};")
    for n in ("query", "key", "value"):
        lines += c_array(n, [int(v) for v in r["qin"][n].ravel()], "std::int8_t")
    lines += c_array("expected_out", [int(v) for v in r["out"].ravel()], "std::int8_t")
    lines += c_array("expected_probs", [int(v) for v in r["probs"].ravel()], "std::int8_t")
    lines += c_array("truth", [repr(float(v)) for v in r["truth"].ravel()], "double")
    for n, m in r["extra"].items():
        lines += c_array(n, ["true" if v else "false" for v in m.ravel()], "bool")
    lines += ["// The layer's weights: spans over the arrays above.", "inline emha::MhaS8Weights weights() {",
              "  emha::MhaS8Weights w;"]
    for n in ("q", "k", "v", "out"):
        lines.append(f"  w.{n} = {{{{{n}_weight}}, {{{n}_bias}}, {{{n}_multiplier}}}};")
    for n in ("query", "key", "value", "q", "k", "v", "scores", "context", "out"):
        lines.append(f"  w.zero_point_{n} = zero_point_{n};")
    lines += ["  w.scores = scores_multiplier;", "  w.softmax = softmax;", "  w.context = context_multiplier;",
              "  return w;", "}"]
    lines.append(f"}}  // namespace {c['name']}")
    return lines


def main():
    rng = np.random.default_rng(20261126)
    out = ["// SPDX-License-Identifier: Apache-2.0",
           "// Generated by tests/attention/gen_s8_fixtures.py (TFLite's reference int8 kernels in Python). Do not edit.",
           "#pragma once", "#include <cstddef>", "#include <cstdint>", '#include "emha/attention/options_s8.hpp"', "namespace s8_fixtures {"]
    for c in CASES:
        r = build(c, rng)
        out += emit(r)
        so, zo = r["tp"]["out"]
        err = np.abs((r["out"] - zo) * so - r["truth"])
        print(f"{c['name']}: max |int8 - float64| {err.max():.4f}, mean {err.mean():.4f}, output step {so:.4f}; "
              f"torch fake-quant max {r['fake_err']}")
    out.append("}  // namespace s8_fixtures")
    OUT.write_text("\n".join(out) + "\n")


if __name__ == "__main__":
    main()

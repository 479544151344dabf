# SPDX-License-Identifier: Apache-2.0
"""Generate tests/attention/fixtures/s16x8_layer.hpp: the 16x8 attention layer (int16 activations,
int8 weights), every output value computed by a Python re-implementation of TFLite's reference
16x8 kernels (tests/kernels/gen_s16_fixtures.py: FULLY_CONNECTED per channel with int64 bias,
BATCH_MATMUL int16 with int64 sums, SOFTMAX int16 with TFLite Micro's tables), never from emha's
code.

The graph is gen_s8_fixtures.py's (torch.nn.MultiheadAttention's forward as a TFLite converter
lays it out, the same cases and masks) in TFLite's 16x8 scheme: every activation int16 and
symmetric (zero point 0, scale = max |range| / 32767 over the calibration), the probabilities at
1/32768, weights int8 symmetric per output channel (amax / 127), biases int64 at s_x s_w.
Each case carries the float64 module's output on the float input, and the error of torch's fake
quantization of the same 16x8 graph (torch.fake_quantize_*, float32) beside it.

    /usr/bin/python3 tests/attention/gen_s16x8_fixtures.py      (from the repository root)

Deterministic; overwrites only tests/attention/fixtures/s16x8_layer.hpp.
"""
import math
import pathlib
import sys

import numpy as np

sys.dont_write_bytecode = True
HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "kernels"))
sys.path.insert(0, str(HERE))
from gen_requant_fixtures import c_array, quantize_multiplier  # noqa: E402
from gen_s16_fixtures import batch_matmul_s16, fully_connected_s16x8, softmax_params, softmax_s16  # noqa: E402
from gen_s8_fixtures import CASES as S8_CASES, calibrate, float_module, module_and_inputs, per_channel  # noqa: E402

OUT = HERE / "fixtures" / "s16x8_layer.hpp"
# gen_s8_fixtures.py's cases, and one whose rows are long (where int8 probabilities lose most).
CASES = S8_CASES + [
    dict(name="long_rows", d=16, heads=2, kv_heads=1, head_dim=8, kdim=16, vdim=16, sq=4, skv=96, batch=1,
         seq_first=False, masks="none", single=False, bias=True),
]


def symmetric(lo, hi):
    return max(abs(lo), abs(hi)) / 32767.0


def quantize(x, scale):
    return np.clip(np.round(x / scale), -32768, 32767).astype(np.int64)


def torch_fake_quant(c, w, sc, x_q, x_k, x_v, mask):
    """The graph in float32 with torch's fake quantization at each 16x8 boundary. None without torch."""
    try:
        import torch
    except ImportError:
        return None
    t = lambda a: torch.tensor(a, dtype=torch.float32)  # noqa: E731

    def fq(x, name, scale=None):
        return torch.fake_quantize_per_tensor_affine(x, float(scale or sc[name]), 0, -32768, 32767)

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
        p = fq(torch.nan_to_num(torch.softmax(s, dim=-1), nan=0.0), None, 1.0 / 32768)
        ctx[:, h * hd:(h + 1) * hd] = p @ v[:, kv]
    out = fq(fq(ctx, "context") @ fq_w(w["wo"]).T + t(w["bo"]), "out")
    return out.double().numpy()


def build(c, rng):
    d, hd, qd = c["d"], c["head_dim"], c["heads"] * c["head_dim"]
    w, mask, extra, self_attn, inputs = module_and_inputs(c, rng)
    ranges = calibrate(c, w, mask, inputs, rng, 32)
    sc = {n: symmetric(*r) for n, r in ranges.items()}
    if self_attn:
        sc["key"] = sc["value"] = sc["query"]
    single = c["single"]

    def projection(wf, bf, x_name, y_name):
        wq, sw = per_channel(wf)
        bias = np.round(bf / (sc[x_name] * sw)).astype(np.int64)
        return wq, bias, [quantize_multiplier(sc[x_name] * s / sc[y_name], single) for s in sw]

    P = dict(q=projection(w["wq"], w["bq"], "query", "q"), k=projection(w["wk"], w["bk"], "key", "k"),
             v=projection(w["wv"], w["bv"], "value", "v"), out=projection(w["wo"], w["bo"], "context", "out"))
    m_scores = quantize_multiplier(sc["q"] * sc["k"] / math.sqrt(hd) / sc["scores"], single)
    sm = softmax_params(sc["scores"], single)
    m_context = quantize_multiplier(sc["v"] / 32768.0 / sc["context"], single)

    xq, xk, xv = inputs(rng)  # the test input: one more draw
    qin = {n: quantize(x, sc[n]) for n, x in (("query", xq), ("key", xk), ("value", xv))}
    truth = np.stack([float_module(c, w, xq[b], xk[b], xv[b], mask[b])[0] for b in range(c["batch"])])

    out = np.zeros((c["batch"], c["sq"], d), dtype=np.int64)
    probs = np.zeros((c["batch"], c["heads"], c["sq"], c["skv"]), dtype=np.int64)
    g = c["heads"] // c["kv_heads"]
    for b in range(c["batch"]):
        Q = fully_connected_s16x8(qin["query"][b], *P["q"])
        K = fully_connected_s16x8(qin["key"][b], *P["k"])
        V = fully_connected_s16x8(qin["value"][b], *P["v"])
        C = np.zeros((c["sq"], qd), dtype=np.int64)
        for h in range(c["heads"]):
            kv = slice((h // g) * hd, (h // g + 1) * hd)
            S = batch_matmul_s16(Q[:, h * hd:(h + 1) * hd], K[:, kv], *m_scores)
            for i in range(c["sq"]):
                keep = [j for j in range(c["skv"]) if not mask[b, h, i, j]]
                if keep:
                    probs[b, h, i, keep] = softmax_s16([int(S[i, j]) for j in keep], sm, single)
            C[:, h * hd:(h + 1) * hd] = batch_matmul_s16(probs[b, h], V[:, kv].T, *m_context)
        out[b] = fully_connected_s16x8(C, *P["out"])

    fake = [torch_fake_quant(c, w, sc, xq[b], xk[b], xv[b], mask[b]) for b in range(c["batch"])]
    fake_err = None if fake[0] is None else float(np.abs(np.stack(fake) - truth).max())
    err = np.abs(out * sc["out"] - truth)
    assert err.max() < 0.05 * (ranges["out"][1] - ranges["out"][0]), err.max()  # a misread stage would not be
    lay = (lambda t: np.transpose(t, (1, 0, 2))) if c["seq_first"] else (lambda t: t)
    return dict(c=c, P=P, sc=sc, m_scores=m_scores, sm=sm, m_context=m_context,
                qin={n: lay(t) for n, t in qin.items()}, out=lay(out), probs=probs, truth=lay(truth), extra=extra,
                self_attn=self_attn, fake_err=fake_err)


def emit(r):
    c, P = r["c"], r["P"]
    lines = [f"namespace {c['name']} {{"]
    for k in ("d", "heads", "kv_heads", "head_dim", "kdim", "vdim", "sq", "skv", "batch"):
        lines.append(f"inline constexpr std::size_t {k} = {c[k]};")
    lines.append(f"inline constexpr bool seq_first = {str(c['seq_first']).lower()};")
    lines.append(f"inline constexpr bool single_rounding = {str(c['single']).lower()};")
    lines.append(f"inline constexpr bool self_attention = {str(r['self_attn']).lower()};")
    lines.append(f"inline constexpr bool bias = {str(c['bias']).lower()};")
    for n in ("q", "k", "v", "out"):
        wq, bias, mults = P[n]
        lines += c_array(f"{n}_weight", [int(v) for v in wq.ravel()], "std::int8_t")
        lines += c_array(f"{n}_bias", [f"std::int64_t({int(v)})" for v in bias], "std::int64_t")
        lines += c_array(f"{n}_multiplier", [f"{{{m}, {s}}}" for m, s in mults], "emha::QuantizedMultiplier")
    lines.append(f"inline constexpr emha::QuantizedMultiplier scores_multiplier{{{r['m_scores'][0]}, {r['m_scores'][1]}}};")
    lines.append(f"inline constexpr emha::QuantizedMultiplier context_multiplier{{{r['m_context'][0]}, {r['m_context'][1]}}};")
    lines.append(f"inline constexpr emha::SoftmaxS16Params softmax{{{{{r['sm'][0]}, {r['sm'][1]}}}}};")
    lines.append(f"inline constexpr double out_scale = {r['sc']['out']!r};")
    lines.append("// max |torch fake-quant 16x8 graph - float64 module| (torch.fake_quantize_*, float32; -1: no torch)")
    lines.append(f"inline constexpr double torch_fake_quant_error = {r['fake_err'] if r['fake_err'] is not None else -1.0!r};")
    for n in ("query", "key", "value"):
        lines += c_array(n, [int(v) for v in r["qin"][n].ravel()], "std::int16_t")
    lines += c_array("expected_out", [int(v) for v in r["out"].ravel()], "std::int16_t")
    lines += c_array("expected_probs", [int(v) for v in r["probs"].ravel()], "std::int16_t")
    lines += c_array("truth", [repr(float(v)) for v in r["truth"].ravel()], "double")
    for n, m in r["extra"].items():
        lines += c_array(n, ["true" if v else "false" for v in m.ravel()], "bool")
    lines += ["// The layer's weights: spans over the arrays above (no bias spans where the module has none).",
              "inline emha::MhaS16x8Weights weights() {", "  emha::MhaS16x8Weights w;"]
    for n in ("q", "k", "v", "out"):
        b = f"{{{n}_bias}}" if c["bias"] else "{}"
        lines.append(f"  w.{n} = {{{{{n}_weight}}, {b}, {{{n}_multiplier}}}};")
    lines += ["  w.scores = scores_multiplier;", "  w.softmax = softmax;", "  w.context = context_multiplier;",
              "  return w;", "}"]
    lines.append(f"}}  // namespace {c['name']}")
    return lines


def main():
    rng = np.random.default_rng(20261127)
    out = ["// SPDX-License-Identifier: Apache-2.0",
           "// Generated by tests/attention/gen_s16x8_fixtures.py (TFLite's reference 16x8 kernels in Python). Do not edit.",
           "#pragma once", "#include <cstddef>", "#include <cstdint>", '#include "emha/attention/options_s16x8.hpp"',
           "namespace s16x8_fixtures {"]
    for c in CASES:
        r = build(c, rng)
        out += emit(r)
        err = np.abs(r["out"] * r["sc"]["out"] - r["truth"])
        rms = math.sqrt(float(np.mean(err ** 2))) / math.sqrt(float(np.mean(r["truth"] ** 2)))
        print(f"{c['name']}: max |16x8 - float64| {err.max():.5f}, rms {100 * rms:.2f}% of the output's, "
              f"output step {r['sc']['out']:.6f}; torch fake-quant max {r['fake_err']}")
    out.append("}  // namespace s16x8_fixtures")
    OUT.write_text("\n".join(out) + "\n")


if __name__ == "__main__":
    main()

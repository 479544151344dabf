# SPDX-License-Identifier: Apache-2.0
"""Fixtures of the exporter's full-integer path (emha_export.py --quantize int8 --calibration FILE):
a seeded PyTorch module and a calibration tensor are saved with torch.save and exported by
lib/export/emha_export.py run as a user runs it (a subprocess); independently of the exporter,
this file quantizes the same module on the same calibration as TFLite's post-training
quantization does and runs TFLite's reference int8 kernels (tests/kernels/gen_*_fixtures.py's
Python) on a test input, so the C++ test (test_s8_export.cpp) can check every integer the
exporter wrote and every output byte of the layer built from it.

TFLite's conventions written here from its code, not from the exporter's:
  tensorflow/lite/tools/optimize/quantization_utils.cc  SymmetricPerChannelQuantizeValues
      (q = round(w * (1 / scale)), scale = max |w| / 127 in float32), bias at float32
      input_scale * filter_scale, rounded half away from zero
  tensorflow/lite/kernels/kernel_util.cc  PopulateConvolutionQuantizationParams (per channel:
      double(s_in) * double(s_w) / double(s_out))
  tensorflow/lite/micro/kernels/batch_matmul.cc (tflite-micro d138bfc): double(s_lhs) *
      double(s_rhs) / double(s_out)
  tensorflow/lite/tools/optimize/quantization_utils.cc  GetAsymmetricQuantizationParams (the
      calibrated float32 range widened to hold 0, float32 arithmetic)

Cases (each written to tests/export/fixtures/s8_<case>.hpp and s8_<case>.bin, the version 4 blob,
by the exporter, and s8_<case>_expected.hpp by this file):
  nn_mha     torch.nn.MultiheadAttention(32, 4), biases, double rounding, batch 2
  proj_gqa   q/k/v/o_proj (the proj family) with 4 query heads on 2 K/V heads, no biases,
             calibrated and run causal (--reference-causal), single rounding

It prints each case's error against the float64 module beside torch.ao's fake quantization of the
same graph on the same calibration (torch_ao_fake_quant: PyTorch's observers and fake_quantize_*).

    cd tests/export && /usr/bin/python3 gen_s8_export.py      (deterministic)
"""
import math
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.dont_write_bytecode = True
HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE.parent / "kernels"))
from gen_requant_fixtures import c_array, quantize_multiplier  # noqa: E402
from gen_matmul_s8_fixtures import batch_matmul_op, fully_connected_per_channel  # noqa: E402
from gen_softmax_s8_fixtures import params as softmax_params, softmax_s8  # noqa: E402

D, HEADS, S, BATCH = 32, 4, 8, 2


class Proj(torch.nn.Module):
    """Llama-like projections (no positions): q_proj, k_proj, v_proj on kv_heads, o_proj."""

    def __init__(self, d, heads, kv_heads):
        super().__init__()
        dk = d // heads
        self.q_proj = torch.nn.Linear(d, heads * dk, bias=False)
        self.k_proj = torch.nn.Linear(d, kv_heads * dk, bias=False)
        self.v_proj = torch.nn.Linear(d, kv_heads * dk, bias=False)
        self.o_proj = torch.nn.Linear(heads * dk, d, bias=False)


def away(x):
    return math.floor(abs(x) + 0.5) * (1 if x >= 0 else -1)


def act_params(lo, hi):
    """GetAsymmetricQuantizationParams (quantization_utils.cc), float32 throughout, on the
    calibrator's float32 range."""
    rmin, rmax = np.float32(min(np.float32(lo), 0)), np.float32(max(np.float32(hi), 0))
    scale = np.float32(rmax - rmin) / np.float32(255)
    zero_point_from_min = np.float32(-128) - rmin / scale
    if zero_point_from_min < -128:
        return float(scale), -128
    if zero_point_from_min > 127:
        return float(scale), 127
    return float(scale), int(away(float(zero_point_from_min)))


def weight_q(w):
    """SymmetricPerChannelQuantizeValues: float32 scales, q = round(w * (1 / scale))."""
    w = w.astype(np.float32)
    scale = (np.abs(w).max(axis=1) / np.float32(127)).astype(np.float32)
    inv = (np.float32(1) / scale).astype(np.float32)
    q = np.vectorize(away)((w * inv[:, None]).astype(np.float32).astype(np.float64))
    return np.clip(q, -127, 127).astype(np.int64), scale


def module_weights(module, heads, kv_heads):
    sd = {k: v.detach().double().numpy() for k, v in module.state_dict().items()}
    qd, kvd = D, kv_heads * (D // heads)
    if "in_proj_weight" in sd:
        w, b = sd["in_proj_weight"], sd["in_proj_bias"]
        return dict(q=(w[:qd], b[:qd]), k=(w[qd:qd + kvd], b[qd:qd + kvd]), v=(w[qd + kvd:], b[qd + kvd:]),
                    out=(sd["out_proj.weight"], sd["out_proj.bias"]))
    z = np.zeros
    return dict(q=(sd["q_proj.weight"], z(qd)), k=(sd["k_proj.weight"], z(kvd)), v=(sd["v_proj.weight"], z(kvd)),
                out=(sd["o_proj.weight"], z(D)))


def float_stages(w, x, heads, kv_heads, causal):
    """The float64 module on x [S, D]: each stage's values (scores only where a row attends)."""
    dk, g, n = D // heads, heads // kv_heads, x.shape[0]
    y = {r: x @ w[r][0].T + w[r][1] for r in "qkv"}
    keep = ~np.triu(np.ones((n, n), dtype=bool), 1) if causal else np.ones((n, n), dtype=bool)
    ctx, seen = np.zeros((n, heads * dk)), []
    for h in range(heads):
        kv = slice((h // g) * dk, (h // g + 1) * dk)
        s = y["q"][:, h * dk:(h + 1) * dk] @ y["k"][:, kv].T / math.sqrt(dk)
        seen.append(s[keep])
        s = np.where(keep, s, -np.inf)
        e = np.exp(s - s.max(axis=1, keepdims=True))
        ctx[:, h * dk:(h + 1) * dk] = (e / e.sum(axis=1, keepdims=True)) @ y["v"][:, kv]
    y.update(query=x, scores=np.concatenate(seen), context=ctx, out=ctx @ w["out"][0].T + w["out"][1])
    return y


def quantized(w, calib, heads, kv_heads, causal, single):
    ranges = {}
    for x in calib:
        for n, t in float_stages(w, x, heads, kv_heads, causal).items():
            lo, hi = ranges.get(n, (math.inf, -math.inf))
            ranges[n] = (min(lo, float(t.min())), max(hi, float(t.max())))
    tp = {n: act_params(*r) for n, r in ranges.items()}
    P = {}
    for r, xn, yn in (("q", "query", "q"), ("k", "query", "k"), ("v", "query", "v"), ("out", "context", "out")):
        q, sw = weight_q(w[r][0])
        sx, zx = tp[xn]
        bias = np.array([away(float(b) / float(np.float32(sx) * sw[j])) for j, b in enumerate(w[r][1])], dtype=np.int64)
        mults = [quantize_multiplier(sx * float(s) / tp[yn][0], single) for s in sw]
        P[r] = (q, bias, mults)
    dk = D // heads
    m_scores = quantize_multiplier(tp["q"][0] * tp["k"][0] * (dk ** -0.5) / tp["scores"][0], single)
    m_context = quantize_multiplier(tp["v"][0] / 256.0 / tp["context"][0], single)
    return tp, P, m_scores, softmax_params(1.0, tp["scores"][0], single), m_context


def tflite_layer(x, tp, P, m_scores, sm, m_context, heads, kv_heads, causal, single):
    """TFLite's reference int8 graph on one sequence x [S, D] int8."""
    z = {n: tp[n][1] for n in tp}
    dk, g, n = D // heads, heads // kv_heads, x.shape[0]
    Y = {r: fully_connected_per_channel(x, *P[r], z["query"], z[r], single) for r in "qkv"}
    C = np.zeros((n, heads * dk), dtype=np.int64)
    for h in range(heads):
        kv = slice((h // g) * dk, (h // g + 1) * dk)
        Sc = batch_matmul_op(Y["q"][:, h * dk:(h + 1) * dk], Y["k"][:, kv], z["q"], z["k"], *m_scores, z["scores"], single)
        Pm = np.full((n, n), -128, dtype=np.int64)
        for i in range(n):
            keys = list(range(i + 1)) if causal else list(range(n))
            Pm[i, keys] = softmax_s8([int(Sc[i, j]) for j in keys], sm, single)
        C[:, h * dk:(h + 1) * dk] = batch_matmul_op(Pm, Y["v"][:, kv].T, -128, z["v"], *m_context, z["context"], single)
    return fully_connected_per_channel(C, *P["out"], z["context"], z["out"], single)


def torch_ao_fake_quant(w, calib, x, heads, kv_heads, causal):
    """PyTorch's own fake quantization of the same graph on the same calibration, for comparison:
    torch.ao.quantization's MinMaxObserver (int8, per tensor, affine) at every stage the int8 layer
    quantizes, PerChannelMinMaxObserver (symmetric, [-127, 127]) on the weights, the softmax's
    output at TFLite's 1/256 and -128, float32 arithmetic with fake_quantize_* between stages (biases
    float, as PyTorch keeps them). Returns the output [S, D] for each sequence of x."""
    from torch.ao.quantization.observer import MinMaxObserver, PerChannelMinMaxObserver
    obs = {n: MinMaxObserver(dtype=torch.qint8, qscheme=torch.per_tensor_affine) for n in
           ("query", "q", "k", "v", "scores", "context", "out")}
    for xc in calib:
        for n, t in float_stages(w, xc, heads, kv_heads, causal).items():
            obs[n](torch.from_numpy(np.asarray(t, dtype=np.float32)))
    qp = {n: o.calculate_qparams() for n, o in obs.items()}

    def fq(t, n):
        return torch.fake_quantize_per_tensor_affine(t, float(qp[n][0]), int(qp[n][1]), -128, 127)

    wq = {}
    for r in ("q", "k", "v", "out"):
        wt = torch.from_numpy(np.asarray(w[r][0], dtype=np.float32))
        o = PerChannelMinMaxObserver(ch_axis=0, dtype=torch.qint8, qscheme=torch.per_channel_symmetric,
                                     quant_min=-127, quant_max=127)
        o(wt)
        sc, zp = o.calculate_qparams()
        wq[r] = (torch.fake_quantize_per_channel_affine(wt, sc, zp.to(torch.int32), 0, -127, 127),
                 torch.from_numpy(np.asarray(w[r][1], dtype=np.float32)))
    dk, g = D // heads, heads // kv_heads
    outs = []
    for xs in x:
        xt = fq(torch.from_numpy(xs.astype(np.float32)), "query")
        y = {r: fq(xt @ wq[r][0].T + wq[r][1], r) for r in "qkv"}
        n = xt.shape[0]
        keep = torch.ones(n, n, dtype=torch.bool)
        if causal:
            keep = ~torch.triu(keep, 1)
        ctx = torch.zeros(n, heads * dk)
        for h in range(heads):
            kv = slice((h // g) * dk, (h // g + 1) * dk)
            sc = fq(y["q"][:, h * dk:(h + 1) * dk] @ y["k"][:, kv].T / math.sqrt(dk), "scores")
            p = torch.softmax(sc.masked_fill(~keep, -math.inf), dim=1)
            p = torch.fake_quantize_per_tensor_affine(p, 1.0 / 256, -128, -128, 127)
            ctx[:, h * dk:(h + 1) * dk] = p @ y["v"][:, kv]
        outs.append(fq(fq(ctx, "context") @ wq["out"][0].T + wq["out"][1], "out").double().numpy())
    return np.stack(outs)


def case(name, module, heads, kv_heads, causal, single, export_args, tmp):
    g = torch.Generator().manual_seed(7)
    calib = torch.randn(6, S, D, generator=g, dtype=torch.float64) * 0.8 + 0.1
    ck, cal = tmp / f"{name}.pt", tmp / f"{name}_calibration.pt"
    torch.save(module.state_dict(), ck)
    torch.save(calib.float(), cal)
    header = HERE / "fixtures" / f"s8_{name}.hpp"
    subprocess.run([sys.executable, str(ROOT / "lib" / "export" / "emha_export.py"), str(ck), "--heads", str(heads),
                    "--quantize", "int8", "--calibration", str(cal), "--rounding", "single" if single else "double",
                    "--max-seq-q", str(S), "--max-batch", str(BATCH), "--name", f"s8_export::{name}",
                    "--header", str(header), "--blob", str(HERE / "fixtures" / f"s8_{name}.bin")] + export_args,
                   check=True)
    text = header.read_text().replace(str(tmp) + "/", "")
    header.write_text(text)

    w = module_weights(module, heads, kv_heads)
    tp, P, m_scores, sm, m_context = quantized(w, calib.float().double().numpy(), heads, kv_heads, causal, single)
    x = torch.randn(BATCH, S, D, generator=g, dtype=torch.float64).numpy() * 0.8 + 0.1
    sx, zx = tp["query"]
    xq = np.clip(np.vectorize(away)(x / sx) + zx, -128, 127).astype(np.int64)
    out = np.stack([tflite_layer(xq[b], tp, P, m_scores, sm, m_context, heads, kv_heads, causal, single)
                    for b in range(BATCH)])
    lines = ["// SPDX-License-Identifier: Apache-2.0",
             "// Generated by tests/export/gen_s8_export.py (TFLite's quantization and reference int8 kernels",
             "// in Python, independent of the exporter). Do not edit.", "#pragma once", "#include <cstddef>",
             "#include <cstdint>", '#include "emha/attention/options_s8.hpp"',
             f"namespace s8_export::{name}::expected {{",
             f"inline constexpr std::size_t batch = {BATCH}, seq = {S};",
             f"inline constexpr bool causal = {'true' if causal else 'false'};"]
    for r in ("q", "k", "v", "out"):
        q, bias, mults = P[r]
        zin = tp["query" if r != "out" else "context"][1]
        lines += c_array(f"{r}_weight", [int(v) for v in q.ravel()], "std::int8_t")
        lines += c_array(f"{r}_bias", [int(v) for v in bias - zin * q.sum(axis=1)], "std::int32_t")
        lines += c_array(f"{r}_multiplier", [f"{{{m}, {s}}}" for m, s in mults], "emha::QuantizedMultiplier")
    for st in ("query", "q", "k", "v", "scores", "context", "out"):
        lines.append(f"inline constexpr std::int32_t zero_point_{st} = {tp[st][1]};")
    lines += [f"inline constexpr emha::QuantizedMultiplier scores{{{m_scores[0]}, {m_scores[1]}}};",
              f"inline constexpr emha::QuantizedMultiplier context{{{m_context[0]}, {m_context[1]}}};",
              f"inline constexpr emha::SoftmaxS8Params softmax{{{sm[0]}, {sm[1]}, {sm[2]}}};",
              f"inline constexpr double input_scale = {sx!r}, output_scale = {tp['out'][0]!r};"]
    lines += c_array("input", [int(v) for v in xq.ravel()], "std::int8_t")
    lines += c_array("out", [int(v) for v in out.ravel()], "std::int8_t")
    lines.append(f"}}  // namespace s8_export::{name}::expected")
    (HERE / "fixtures" / f"s8_{name}_expected.hpp").write_text("\n".join(lines) + "\n")
    truth = np.stack([float_stages(w, x[b], heads, kv_heads, causal)["out"] for b in range(BATCH)])
    err = np.abs((out - tp["out"][1]) * tp["out"][0] - truth)
    ao = np.abs(torch_ao_fake_quant(w, calib.float().double().numpy(), x, heads, kv_heads, causal) - truth)
    rms = np.sqrt((truth ** 2).mean())
    print(f"{name}: |int8 layer - float64 module| max {err.max():.4f}, rms {np.sqrt((err ** 2).mean()) / rms:.4f} "
          f"of rms(y); torch.ao fake-quant: max {ao.max():.4f}, rms {np.sqrt((ao ** 2).mean()) / rms:.4f} "
          f"(output step {tp['out'][0]:.4f})")


def main():
    torch.manual_seed(20261126)
    with tempfile.TemporaryDirectory() as d:
        tmp = pathlib.Path(d)
        case("nn_mha", torch.nn.MultiheadAttention(D, HEADS), HEADS, HEADS, False, False, [], tmp)
        case("proj_gqa", Proj(D, HEADS, 2), HEADS, 2, True, True, ["--kv-heads", "2", "--reference-causal"], tmp)


if __name__ == "__main__":
    main()

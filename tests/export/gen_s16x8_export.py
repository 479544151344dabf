# SPDX-License-Identifier: Apache-2.0
"""Fixtures of the exporter's 16x8 path (emha_export.py --quantize 16x8 --calibration FILE), as
gen_s8_export.py makes the int8 path's: the same seeded modules and calibration, exported by
lib/export/emha_export.py run as a user runs it; independently of the exporter, this file
quantizes the module as TFLite's post-training 16x8 quantization does and runs TFLite's
reference 16x8 kernels (tests/kernels/gen_s16_fixtures.py) on a test input, so that
test_s16x8_export.cpp can check every integer the exporter wrote and every output value.

TFLite's 16x8 conventions written here from its code, not from the exporter's:
  tensorflow/lite/tools/optimize/quantization_utils.cc  GetSymmetricQuantizationParams (the
      float32 range widened to hold 0, scale = max(|min|, |max|) / 32767 in float32, zero point 0);
      SymmetricPerChannelQuantizeValues for the int8 weights (gen_s8_export.weight_q); the int64
      bias at float32 input_scale * filter_scale, rounded half away from zero
  tensorflow/lite/micro/kernels/softmax_common.cc  QuantizeMultiplier(double(s) * beta / (10 / 65535))

Cases (tests/export/fixtures/s16x8_<case>.hpp by the exporter, s16x8_<case>_expected.hpp here):
  nn_mha     torch.nn.MultiheadAttention(32, 4), biases, double rounding, batch 2
  proj_gqa   q/k/v/o_proj with 4 query heads on 2 K/V heads, no biases, causal, single rounding

    cd tests/export && /usr/bin/python3 gen_s16x8_export.py      (deterministic)
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
sys.path.insert(0, str(HERE))
from gen_requant_fixtures import c_array, quantize_multiplier  # noqa: E402
from gen_s16_fixtures import batch_matmul_s16, fully_connected_s16x8, softmax_params, softmax_s16  # noqa: E402
from gen_s8_export import BATCH, D, HEADS, S, Proj, away, float_stages, module_weights, weight_q  # noqa: E402


def sym_scale(lo, hi):
    """GetSymmetricQuantizationParams with half_quant_range 32767, float32."""
    f = np.float32
    lo, hi = min(f(lo), f(0)), max(f(hi), f(0))
    return float(max(abs(hi), abs(lo)) / f(32767))


def quantized(w, calib, heads, kv_heads, causal, single):
    ranges = {}
    for x in calib:
        for n, t in float_stages(w, x, heads, kv_heads, causal).items():
            lo, hi = ranges.get(n, (math.inf, -math.inf))
            ranges[n] = (min(lo, float(t.min())), max(hi, float(t.max())))
    sc = {n: sym_scale(*r) for n, r in ranges.items()}
    P = {}
    for r, xn, yn in (("q", "query", "q"), ("k", "query", "k"), ("v", "query", "v"), ("out", "context", "out")):
        q, sw = weight_q(w[r][0])
        bias = np.array([away(float(b) / float(np.float32(sc[xn]) * sw[j])) for j, b in enumerate(w[r][1])],
                        dtype=np.int64)
        P[r] = (q, bias, [quantize_multiplier(sc[xn] * float(s) / sc[yn], single) for s in sw])
    dk = D // heads
    m_scores = quantize_multiplier(sc["q"] * sc["k"] * (dk ** -0.5) / sc["scores"], single)
    m_context = quantize_multiplier(sc["v"] / 32768.0 / sc["context"], single)
    return sc, P, m_scores, softmax_params(sc["scores"], single), m_context


def tflite_layer(x, P, m_scores, sm, m_context, heads, kv_heads, causal, single):
    """TFLite's reference 16x8 graph on one sequence x [S, D] int16."""
    dk, g, n = D // heads, heads // kv_heads, x.shape[0]
    Y = {r: fully_connected_s16x8(x, *P[r]) for r in "qkv"}
    C = np.zeros((n, heads * dk), dtype=np.int64)
    for h in range(heads):
        kv = slice((h // g) * dk, (h // g + 1) * dk)
        Sc = batch_matmul_s16(Y["q"][:, h * dk:(h + 1) * dk], Y["k"][:, kv], *m_scores)
        Pm = np.zeros((n, n), dtype=np.int64)
        for i in range(n):
            keys = list(range(i + 1)) if causal else list(range(n))
            Pm[i, keys] = softmax_s16([int(Sc[i, j]) for j in keys], sm, single)
        C[:, h * dk:(h + 1) * dk] = batch_matmul_s16(Pm, Y["v"][:, kv].T, *m_context)
    return fully_connected_s16x8(C, *P["out"])


def case(name, module, heads, kv_heads, causal, single, export_args, tmp):
    g = torch.Generator().manual_seed(7)
    calib = torch.randn(6, S, D, generator=g, dtype=torch.float64) * 0.8 + 0.1
    ck, cal = tmp / f"{name}.pt", tmp / f"{name}_calibration.pt"
    torch.save(module.state_dict(), ck)
    torch.save(calib.float(), cal)
    header = HERE / "fixtures" / f"s16x8_{name}.hpp"
    subprocess.run([sys.executable, str(ROOT / "lib" / "export" / "emha_export.py"), str(ck), "--heads", str(heads),
                    "--quantize", "16x8", "--calibration", str(cal), "--rounding", "single" if single else "double",
                    "--max-seq-q", str(S), "--max-batch", str(BATCH), "--name", f"s16x8_export::{name}",
                    "--header", str(header)] + export_args, check=True)
    header.write_text(header.read_text().replace(str(tmp) + "/", ""))

    w = module_weights(module, heads, kv_heads)
    sc, P, m_scores, sm, m_context = quantized(w, calib.float().double().numpy(), heads, kv_heads, causal, single)
    x = torch.randn(BATCH, S, D, generator=g, dtype=torch.float64).numpy() * 0.8 + 0.1
    xq = np.clip(np.vectorize(away)(x / sc["query"]), -32768, 32767).astype(np.int64)
    out = np.stack([tflite_layer(xq[b], P, m_scores, sm, m_context, heads, kv_heads, causal, single)
                    for b in range(BATCH)])
    lines = ["// SPDX-License-Identifier: Apache-2.0",
             "// Generated by tests/export/gen_s16x8_export.py (TFLite's 16x8 quantization and reference kernels",
             "// in Python, independent of the exporter). Do not edit.", "#pragma once", "#include <cstddef>",
             "#include <cstdint>", '#include "emha/attention/options_s16x8.hpp"',
             f"namespace s16x8_export::{name}::expected {{",
             f"inline constexpr std::size_t batch = {BATCH}, seq = {S};",
             f"inline constexpr bool causal = {'true' if causal else 'false'};"]
    for r in ("q", "k", "v", "out"):
        q, bias, mults = P[r]
        lines += c_array(f"{r}_weight", [int(v) for v in q.ravel()], "std::int8_t")
        lines += c_array(f"{r}_bias", [f"std::int64_t({int(v)})" for v in bias], "std::int64_t")
        lines += c_array(f"{r}_multiplier", [f"{{{m}, {s}}}" for m, s in mults], "emha::QuantizedMultiplier")
    lines += [f"inline constexpr emha::QuantizedMultiplier scores{{{m_scores[0]}, {m_scores[1]}}};",
              f"inline constexpr emha::QuantizedMultiplier context{{{m_context[0]}, {m_context[1]}}};",
              f"inline constexpr emha::QuantizedMultiplier softmax{{{sm[0]}, {sm[1]}}};",
              f"inline constexpr double input_scale = {sc['query']!r}, output_scale = {sc['out']!r};"]
    lines += c_array("input", [int(v) for v in xq.ravel()], "std::int16_t")
    lines += c_array("out", [int(v) for v in out.ravel()], "std::int16_t")
    lines.append(f"}}  // namespace s16x8_export::{name}::expected")
    (HERE / "fixtures" / f"s16x8_{name}_expected.hpp").write_text("\n".join(lines) + "\n")
    truth = np.stack([float_stages(w, x[b], heads, kv_heads, causal)["out"] for b in range(BATCH)])
    err = np.abs(out * sc["out"] - truth)
    rms = np.sqrt((truth ** 2).mean())
    print(f"{name}: |16x8 layer - float64 module| max {err.max():.5f}, rms {np.sqrt((err ** 2).mean()) / rms:.4f} "
          f"of rms(y) (output step {sc['out']:.6f})")


def main():
    torch.manual_seed(20261126)  # gen_s8_export.py's modules
    with tempfile.TemporaryDirectory() as d:
        tmp = pathlib.Path(d)
        case("nn_mha", torch.nn.MultiheadAttention(D, HEADS), HEADS, HEADS, False, False, [], tmp)
        case("proj_gqa", Proj(D, HEADS, 2), HEADS, 2, True, True, ["--kv-heads", "2", "--reference-causal"], tmp)


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: Apache-2.0
"""Generate C++ fixtures for the layer with int8 weights (Config::weight_type = WeightType::int8):
three of gen_feature_fixtures.py's modules (the same seeds, the same FeatureAttention) whose four
projection weights are quantized per output channel as torchao's int8_weight_only and
PRIOR-ART.md's W8A32 scheme do: scale = amax(|row|) / 127 (1 for a zero row), q =
round-half-to-even(w / scale) clamped to [-127, 127]; the module then runs on the dequantized
weights q.float() * scale[:, None] (F.linear's input in torchao), in float32 (`out`) and, as the
truth, in float64 (`out_f64`). `out_unquantized_f64` is the float64 output of the module before
quantization: the difference to `out_f64` is the quantization's, reported, not bounded.

Writes, from the repository root (deterministic; overwrites only tests/attention/w8_fixtures/):

    /usr/bin/python3 tests/attention/gen_w8_fixtures.py

    w8_fixtures/<name>.hpp   `struct emha::w8_fixtures::<name>`: the feature fixture's members,
                             with in_proj_weight / out_proj_weight the dequantized floats, plus
                             in_proj_weight_int8, in_proj_weight_scale, out_proj_weight_int8,
                             out_proj_weight_scale and out_unquantized_f64
    w8_fixtures/all.hpp      `all` (every case), `small` (the Cortex-M firmware's)
"""
import copy
import pathlib
import sys
import zlib

import numpy as np
import torch

sys.dont_write_bytecode = True
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import gen_feature_fixtures as ff  # noqa: E402
from gen_fixtures import wrap  # noqa: E402

OUT_DIR = pathlib.Path(__file__).resolve().parent / "w8_fixtures"
CASES = ["head_dim_wide_gqa", "qk_norm_qwen3", "t5_decoder"]
SMALL = ["qk_norm_qwen3"]


def quantize_rows(w):
    """int8 per output channel (row), symmetric, [-127, 127]: (q, scale) with w ~ q * scale."""
    amax = w.abs().amax(dim=1)
    scale = torch.where(amax > 0, amax / 127, torch.ones_like(amax))
    q = torch.clamp(torch.round(w / scale[:, None]), -127, 127).to(torch.int8)
    return q, scale


def run_case(name):
    description, batch, seq, args = next((d, b, s, a) for n, d, b, s, a in ff.CASES if n == name)
    torch.manual_seed(zlib.crc32(name.encode()))  # gen_feature_fixtures.py's module and input
    m = ff.randomize(ff.FeatureAttention(**args))
    x = torch.randn(batch, seq, args["d_model"])
    with torch.no_grad():
        unquantized64, _ = copy.deepcopy(m).double()(x.double())
        int8 = {}
        for proj in ("q_proj", "k_proj", "v_proj", "o_proj"):
            lin = getattr(m, proj)
            q, scale = quantize_rows(lin.weight)
            assert int(q.min()) >= -127 and int(q.max()) <= 127
            lin.weight.copy_(q.float() * scale[:, None])
            int8[proj] = (q, scale)
        out, p = m(x)
        out64, _ = copy.deepcopy(m).double()(x.double())
    meta = dict(description=description + "; int8 weights per output channel", batch=batch, seq=seq, **args)
    arrays = dict(ff.to_emha(m), query=x, out=out, attn_weights=p, out_f64=out64)
    arrays = {k: (None if v is None else v.detach().contiguous().numpy()) for k, v in arrays.items()}
    w8 = dict(in_proj_weight_int8=torch.cat([int8[p][0] for p in ("q_proj", "k_proj", "v_proj")]),
              in_proj_weight_scale=torch.cat([int8[p][1] for p in ("q_proj", "k_proj", "v_proj")]),
              out_proj_weight_int8=int8["o_proj"][0], out_proj_weight_scale=int8["o_proj"][1])
    w8 = {k: v.contiguous().numpy() for k, v in w8.items()}
    # The dequantized floats the module ran are exactly q * scale in float32.
    assert np.array_equal(arrays["in_proj_weight"],
                          w8["in_proj_weight_int8"].astype(np.float32) * w8["in_proj_weight_scale"][:, None])
    return meta, arrays, w8, unquantized64.numpy()


def render_case(name, meta, arrays, w8, unquantized64):
    text = ff.render_case(name, meta, arrays)
    text = text.replace("gen_feature_fixtures.py", "gen_w8_fixtures.py")
    text = text.replace("namespace emha::feature_fixtures", "namespace emha::w8_fixtures")
    extra = ["  static constexpr bool int8_weights = true;  // weights per output channel, W8A32"]
    for member, arr in w8.items():
        if arr.dtype == np.int8:
            extra += ([f"  static constexpr signed char {member}[] = {{  // {list(arr.shape)}"]
                      + wrap([f"{int(v)}," for v in arr.reshape(-1)], "    ") + ["  };"])
        else:
            extra += ([f"  static constexpr float {member}[] = {{  // {list(arr.shape)}"]
                      + wrap([ff.float_literal(v) + "," for v in arr.reshape(-1)], "    ") + ["  };"])
    extra += ([f"  static constexpr double out_unquantized_f64[] = {{  // {list(unquantized64.shape)}"]
              + wrap([ff.double_literal(v) + "," for v in unquantized64.reshape(-1)], "    ") + ["  };"])
    tail = "};\n}  // namespace emha::w8_fixtures"
    assert text.count(tail) == 1
    return text.replace(tail, "\n".join(extra) + "\n" + tail)


def render_all(names, small):
    tuple_of = lambda alias, ns: [f"using {alias} = std::tuple<"] + wrap(  # noqa: E731
        [n + "," for n in ns[:-1]] + [ns[-1] + ">;"], "    ")
    return "\n".join([
        "// Generated by tests/attention/gen_w8_fixtures.py. Do not edit.",
        "#pragma once", "#include <tuple>", *[f'#include "{n}.hpp"' for n in names],
        "namespace emha::w8_fixtures {", *tuple_of("all", names), "// the Cortex-M firmware's",
        *tuple_of("small", small), "}  // namespace emha::w8_fixtures", ""])


def main():
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    print(f"{'name':22s} max |torch f32 - f64|  max |quantized - float module| (float64)")
    for name in CASES:
        meta, arrays, w8, unquantized64 = run_case(name)
        ff.check(name, meta, arrays)
        (OUT_DIR / f"{name}.hpp").write_text(render_case(name, meta, arrays, w8, unquantized64))
        err = float(np.abs(arrays["out"].astype(np.float64) - arrays["out_f64"]).max())
        quant = float(np.abs(arrays["out_f64"] - unquantized64).max())
        print(f"{name:22s} {err:.3e}             {quant:.3e}")
    (OUT_DIR / "all.hpp").write_text(render_all(CASES, SMALL))


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: Apache-2.0
"""The exporter's refusals and its blob writer (issue #18). Builds bad checkpoints in a temporary
directory, runs lib/export/emha_export.py on each as a subprocess, and requires exit status 1 with
one stderr line naming the tensor (or flag) and both shapes (or values); then parses a blob the
exporter wrote (magic, version, CRC-32, table, values) with read_blob.py, its own reader.

    /usr/bin/python3 tests/export/test_export_errors.py     (ctest: export_errors)

Prints one line per check; exit status 0 only when every check passes.
"""
import pathlib
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch
from torch import nn

sys.dont_write_bytecode = True
HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from read_blob import read_blob  # noqa: E402

EXPORTER = HERE.parent.parent / "lib" / "export" / "emha_export.py"


def proj_module(d_model, kv_rows, bias=True):
    """The q_proj/k_proj/v_proj/o_proj family (HF Llama; GQA when kv_rows < d_model)."""
    m = nn.Module()
    m.q_proj = nn.Linear(d_model, d_model, bias=bias)
    m.k_proj = nn.Linear(d_model, kv_rows, bias=bias)
    m.v_proj = nn.Linear(d_model, kv_rows, bias=bias)
    m.o_proj = nn.Linear(d_model, d_model, bias=bias)
    return m


def holder(prefix, module):
    root = nn.Module()
    root.add_module(prefix, module)
    return root.state_dict()


def per_head_state(d_model, heads):
    m = nn.Module()
    for name in ("q_heads", "k_heads", "v_heads"):
        m.add_module(name, nn.ModuleList(nn.Linear(d_model, d_model // heads) for _ in range(heads)))
    m.output_linear = nn.Linear(d_model, d_model)
    return holder("attn", m)


def encoder():
    layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0)
    return nn.TransformerEncoder(layer, num_layers=1, enable_nested_tensor=False)


def bad_cases():
    """(check name, checkpoint object, exporter flags, substrings stderr must hold)."""
    torch.manual_seed(18)
    cases = []
    gqa = holder("attn", proj_module(32, 16))  # 4 heads of d_k 8 on 2 K/V heads: k_proj [16, 32]
    cases.append(("GQA k_proj with the wrong --heads", gqa, ["--heads", "8", "--kv-heads", "2"],
                  ["attn.k_proj.weight", "[16, 32]", "[8, 32]"]))
    cases.append(("GQA k_proj rows not a multiple of d_k", holder("attn", proj_module(32, 12)),
                  ["--heads", "4"], ["attn.k_proj.weight", "[12, 32]", "d_k 8"]))
    cases.append(("--heads not dividing d_model", gqa, ["--heads", "3"],
                  ["--heads 3", "d_model 32", "attn.q_proj.weight", "[32, 32]"]))
    mha = holder("attn", nn.MultiheadAttention(16, 2))
    mha["attn.in_proj_weight"] = mha["attn.in_proj_weight"].t().contiguous()
    cases.append(("transposed in_proj_weight", mha, ["--heads", "2"],
                  ["attn.in_proj_weight", "[16, 48]", "[48, 16]"]))
    short = per_head_state(16, 4)
    for k in ("attn.q_heads.3.weight", "attn.q_heads.3.bias"):
        del short[k]
    cases.append(("per-head list of the wrong length", short, ["--heads", "4"],
                  ["attn.q_heads", "3 entries", "expected 4"]))
    missing = holder("attn", proj_module(16, 16))
    del missing["attn.k_proj.weight"]
    cases.append(("missing tensor", missing, ["--heads", "2"],
                  ["attn.k_proj.weight is missing", "attn.q_proj.weight", "attn.k_proj.bias"]))
    nan = holder("attn", proj_module(16, 16))
    nan["attn.v_proj.weight"][3, 5] = float("nan")
    cases.append(("non-finite weight", nan, ["--heads", "2"],
                  ["attn.v_proj.weight", "[16, 16]", "non-finite", "[3, 5]"]))
    cases.append(("--heads disagreeing with a whole module", encoder(),
                  ["--prefix", "layers.0.self_attn", "--heads", "4", "--allow-pickle"],
                  ["--heads 4", "layers.0.self_attn.num_heads = 2"]))
    cases.append(("--norm disagreeing with norm_first", encoder(),
                  ["--prefix", "layers.0.self_attn", "--norm", "pre", "--allow-pickle"],
                  ["--norm pre", "layers.0.norm_first"]))
    cases.append(("a whole pickled module without --allow-pickle", encoder(),
                  ["--prefix", "layers.0.self_attn"],
                  ["weights_only=True", "--allow-pickle", "trust"]))
    kv = holder("attn", nn.MultiheadAttention(16, 2, add_bias_kv=True))
    cases.append(("add_bias_kv refused", kv, ["--heads", "2"], ["attn.bias_k", "not supported"]))
    sub = holder("attn", proj_module(16, 16))
    sub["attn.inner_attn_ln.weight"] = torch.ones(16)
    sub["attn.inner_attn_ln.bias"] = torch.zeros(16)
    cases.append(("an unused norm under the prefix", sub, ["--heads", "2", "--norm", "none"],
                  ["attn.inner_attn_ln", "[16]", "not used"]))
    return cases


def run_exporter(checkpoint, flags, tmp):
    out = [] if "--header" in flags else ["--blob", str(tmp / "out.bin")]
    args = ["/usr/bin/python3", str(EXPORTER), str(checkpoint)]
    args += ([] if "--prefix" in flags else ["--prefix", "attn"]) + flags + out
    return subprocess.run(args, capture_output=True, text=True)


def check_refusal(name, obj, flags, needles, tmp):
    path = tmp / "bad.pt"
    torch.save(obj, path)
    done = run_exporter(path, flags, tmp)
    lines = done.stderr.strip().splitlines()
    problems = []
    if done.returncode != 1:
        problems.append(f"exit status {done.returncode}, expected 1")
    if len(lines) != 1 or not lines[0].startswith("emha-export: "):
        problems.append(f"stderr is not one 'emha-export:' line: {done.stderr.strip()!r}")
    problems += [f"stderr lacks {n!r}" for n in needles if n not in done.stderr]
    return problems, lines[-1] if lines else ""


def check_blob(tmp):
    """A blob the exporter wrote, read back: header fields, CRC, values equal to the state_dict."""
    torch.manual_seed(1)
    m = nn.MultiheadAttention(16, 4)
    state = holder("attn", m)
    torch.save(state, tmp / "good.pt")
    done = run_exporter(tmp / "good.pt", ["--heads", "4", "--reference-rows", "5",
                                          "--reference-causal"], tmp)
    if done.returncode:
        return [f"export failed: {done.stderr.strip()}"], ""
    data = (tmp / "out.bin").read_bytes()
    problems = []
    try:
        h, t = read_blob(data)
    except AssertionError as e:
        return [f"read_blob: {e}"], ""
    want = dict(d_model=16, heads=4, kv_heads=4, kdim=16, vdim=16, bias=15, tensor_count=6,
                ref_rows=5, ref_causal=1)
    problems += [f"{k} = {h[k]}, expected {v}" for k, v in want.items() if h[k] != v]
    if sorted(t) != [1, 5, 6, 7, 16, 17]:
        problems.append(f"tensor ids {sorted(t)}, expected [1, 5, 6, 7, 16, 17]")
    else:
        exact = [(1, "attn.in_proj_weight"), (5, "attn.in_proj_bias"), (6, "attn.out_proj.weight"),
                 (7, "attn.out_proj.bias")]
        for tid, key in exact:
            if not np.array_equal(t[tid].reshape(-1), state[key].numpy().reshape(-1)):
                problems.append(f"tensor {tid} differs from {key}")
    corrupt = bytearray(data)
    corrupt[200] ^= 1
    try:
        read_blob(bytes(corrupt))
        problems.append("a flipped byte passed the CRC")
    except AssertionError:
        pass
    crc = struct.unpack_from("<I", data, 12)[0]
    return problems, f"magic EMHA, version 1, {len(data)} bytes, crc32 {crc:#010x}, 6 tensors"


def main():
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        for name, obj, flags, needles in bad_cases():
            problems, line = check_refusal(name, obj, flags, needles, tmp)
            failed += bool(problems)
            print(f"{'FAIL' if problems else 'ok  '} {name}: {'; '.join(problems) or line}")
        problems, line = check_blob(tmp)
        failed += bool(problems)
        print(f"{'FAIL' if problems else 'ok  '} blob written and read back: "
              f"{'; '.join(problems) or line}")
    print(f"{failed} failed" if failed else "all passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

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
from hf_checkpoint import write_folder, write_safetensors  # noqa: E402
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
    cases += hf_cases()
    return cases


class HfFolder:
    """A Hugging Face folder to write: config.json and model.safetensors."""

    def __init__(self, config, tensors):
        self.config, self.tensors = config, tensors


def llama_folder(d=32, heads=4, kv_heads=2, q_rows=None, **config):
    """Layer 0 of a Llama-style model: model.layers.0.self_attn.{q,k,v,o}_proj (no bias)."""
    hd = (q_rows or d) // heads
    m = proj_module(d, kv_heads * hd, bias=False)
    m.q_proj = nn.Linear(d, q_rows or d, bias=False)
    m.o_proj = nn.Linear(q_rows or d, d, bias=False)
    state = {f"model.layers.0.self_attn.{k}": v for k, v in m.state_dict().items()}
    base = dict(model_type="llama", hidden_size=d, num_attention_heads=heads,
                num_key_value_heads=kv_heads, rope_theta=10000.0, rms_norm_eps=1e-6)
    return HfFolder(dict(base, **config), state)


def hf_cases():
    layer = ["--layer", "0"]
    cases = []
    for kind, extra in (("linear", {"factor": 2.0}), ("dynamic", {"factor": 2.0}),
                        ("yarn", {"factor": 4.0}), ("llama3", {"factor": 8.0}),
                        ("longrope", {"long_factor": [1.0] * 4, "short_factor": [1.0] * 4})):
        key = "rope_type" if kind != "dynamic" else "type"  # both spellings are HF's
        cases.append((f"rope scaling {kind} refused by name",
                      llama_folder(rope_scaling=dict({key: kind}, **extra)), layer,
                      [f"rope scaling '{kind}'", "not supported"]))
    cases.append(("head_dim != hidden / heads refused by name",
                  llama_folder(64, 4, 2, q_rows=128, head_dim=32), layer,
                  ["head_dim 32 with hidden_size 64 / 4 heads: emha needs head_dim = d_model / heads"]))
    cases.append(("head_dim from the tensors alone (no config key) refused by name",
                  llama_folder(64, 4, 2, q_rows=128), layer,
                  ["model.layers.0.self_attn.q_proj.weight", "[128, 64]", "head_dim 32",
                   "emha needs head_dim = d_model / heads"]))
    qk = llama_folder(model_type="qwen2")
    qk.tensors["model.layers.0.self_attn.q_norm.weight"] = torch.ones(8)
    qk.tensors["model.layers.0.self_attn.k_norm.weight"] = torch.ones(8)
    cases.append(("QK-norm tensors refused by name", qk, layer,
                  ["QK-norm (q_norm/k_norm) is not supported"]))
    cases.append(("QK-norm model_type refused by name", llama_folder(model_type="qwen3"), layer,
                  ["qwen3", "QK-norm (q_norm/k_norm) is not supported"]))
    t5 = {f"encoder.block.0.layer.0.SelfAttention.{n}.weight": torch.randn(16, 16) for n in "qkvo"}
    t5["encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"] = torch.randn(32, 2)
    cases.append(("T5 refused by name", HfFolder(dict(model_type="t5", d_model=16, d_kv=8,
                                                      num_heads=2), t5), layer,
                  ["T5 attention is not supported", "relative_attention_bias", "unscaled"]))
    cases.append(("T5 tensors without config refused by name", t5,
                  ["--prefix", "encoder.block.0.layer.0.SelfAttention", "--heads", "2"],
                  ["T5 attention", "relative_attention_bias"]))
    cases.append(("--heads disagreeing with config.json", llama_folder(), layer + ["--heads", "8"],
                  ["--heads 8", "config.json num_attention_heads = 4"]))
    cases.append(("--sliding-window disagreeing with config.json",
                  llama_folder(model_type="mistral", sliding_window=4), layer +
                  ["--sliding-window", "8"], ["--sliding-window 8", "config.json sliding_window = 4"]))
    cases.append(("--rope-pairing disagreeing with config.json", llama_folder(), layer +
                  ["--rope-pairing", "interleaved"], ["--rope-pairing interleaved",
                                                       "model_type llama (rotate_half)"]))
    cases.append(("--rope-base disagreeing with config.json", llama_folder(rope_theta=500000.0),
                  layer + ["--rope-base", "10000"], ["--rope-base 10000", "rope_theta = 500000"]))
    cases.append(("--layer naming no layer", llama_folder(), ["--layer", "3"],
                  ["--layer 3", "model.layers.0.self_attn"]))
    return cases


def run_exporter(checkpoint, flags, tmp):
    out = [] if "--header" in flags else ["--blob", str(tmp / "out.bin")]
    args = ["/usr/bin/python3", str(EXPORTER), str(checkpoint)]
    args += ([] if "--prefix" in flags or "--layer" in flags else ["--prefix", "attn"]) + flags + out
    return subprocess.run(args, capture_output=True, text=True)


def check_refusal(name, obj, flags, needles, tmp):
    if isinstance(obj, HfFolder):
        path = write_folder(tmp / "bad_hf", obj.config, obj.tensors)
    else:
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


def check_accepted(tmp):
    """What must export: a torchscale module's own state_dict with an empty --prefix (its
    xpos.scale buffer is not the layer's), and safetensors F16 / BF16 tensors read exactly."""
    sys.path.insert(0, str(HERE.parent / "attention"))
    from gen_seed_fixtures import TorchscaleMHA
    results = []
    torch.manual_seed(3)
    torch.save(TorchscaleMHA(16, 2, xpos=True, subln=True).state_dict(), tmp / "ts.pt")
    done = run_exporter(tmp / "ts.pt", ["--prefix", "", "--heads", "2", "--position", "xpos",
                                        "--norm", "sub"], tmp)
    ok = done.returncode == 0 and "emha-export: proj ''" in done.stdout
    results.append(("torchscale saved on its own, empty --prefix",
                    [] if ok else [f"exit {done.returncode}: {done.stderr.strip()}"],
                    done.stdout.strip()))
    m = nn.MultiheadAttention(16, 2)
    state = {f"attn.{k}": v.detach().half().float() for k, v in m.state_dict().items()}
    state["attn.out_proj.weight"] = state["attn.out_proj.weight"].bfloat16().float()
    write_safetensors(tmp / "half.safetensors", state,
                      {"attn.in_proj_weight": torch.float16, "attn.out_proj.weight": "BF16"})
    done = run_exporter(tmp / "half.safetensors", ["--heads", "2"], tmp)
    problems = [] if done.returncode == 0 else [f"exit {done.returncode}: {done.stderr.strip()}"]
    if not problems:
        _, t = read_blob((tmp / "out.bin").read_bytes())
        for tid, key in ((1, "attn.in_proj_weight"), (6, "attn.out_proj.weight")):
            if not np.array_equal(t[tid].reshape(-1), state[key].numpy().reshape(-1)):
                problems.append(f"tensor {tid} differs from {key} (F16 / BF16 widening)")
    results.append(("safetensors F16 and BF16 read exactly", problems, done.stdout.strip()))
    return results


def main():
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        for name, obj, flags, needles in bad_cases():
            problems, line = check_refusal(name, obj, flags, needles, tmp)
            failed += bool(problems)
            print(f"{'FAIL' if problems else 'ok  '} {name}: {'; '.join(problems) or line}")
        for name, problems, line in check_accepted(tmp):
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

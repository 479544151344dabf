# SPDX-License-Identifier: Apache-2.0
"""The exporter's refusals and its blob writer. Builds bad checkpoints in a temporary
directory, runs lib/export/emha_export.py on each as a subprocess, and requires exit status 1 with
one stderr line naming the tensor (or flag) and both shapes (or values); then parses a blob the
exporter wrote (magic, version, CRC-32, table, values) with read_blob.py, its own reader. The int8
weights' refusals and exports (--weights int8, a checkpoint's own int8): int8_cases.py.

    /usr/bin/python3 tests/export/test_export_errors.py     (ctest: export_errors)

Prints one line per check; exit status 0 only when every check passes.
"""
import os
import pathlib
import struct
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
from torch import nn

sys.dont_write_bytecode = True
HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from hf_checkpoint import write_folder, write_safetensors  # noqa: E402
import int8_cases  # noqa: E402
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
    s8 = ["--quantize", "int8", "--header", os.devnull]
    cases.append(("--quantize int8 of a RoPE module", gqa,
                  ["--heads", "4", "--position", "rope", "--calibration", os.devnull] + s8,
                  ["--quantize int8", "no positions (rope)"]))
    cases.append(("--quantize 16x8 of a RoPE module", gqa,
                  ["--heads", "4", "--position", "rope", "--calibration", os.devnull, "--quantize", "16x8",
                   "--header", os.devnull], ["--quantize 16x8", "no positions (rope)"]))
    cases.append(("--quantize 16x8 with --blob", holder("attn", nn.MultiheadAttention(16, 2)),
                  ["--heads", "2", "--calibration", os.devnull, "--quantize", "16x8", "--blob", os.devnull],
                  ["--blob", "the 16x8 layer", "no blob format"]))
    cases.append(("--quantize int8 with an unreadable calibration file", holder("attn", nn.MultiheadAttention(16, 2)),
                  ["--heads", "2", "--calibration", "/nonexistent/calibration.pt"] + s8,
                  ["--calibration /nonexistent/calibration.pt", "not a tensor"]))
    # torchscale's layer with xPos saved as its state_dict: the buffer xpos.scale says xPos.
    sys.path.insert(0, str(HERE.parent / "attention"))
    from gen_seed_fixtures import TorchscaleMHA
    ts = TorchscaleMHA(16, 2, xpos=True, subln=True).state_dict()
    ts_flags = ["--prefix", "", "--heads", "2", "--norm", "sub"]
    cases.append(("torchscale's xpos.scale with --position none", ts, ts_flags + ["--position", "none"],
                  ["--position none disagrees with xpos.scale (torchscale's xPos buffer)"]))
    cases.append(("an xpos.scale that is not torchscale's", dict(ts, **{"xpos.scale": ts["xpos.scale"] * 1.01}),
                  ts_flags, ["xpos.scale ([4])", "not torchscale's xPos scale for head_dim 8"]))
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
    cases += int8_cases.refusals()
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
    llama3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
              "high_freq_factor": 4.0, "original_max_position_embeddings": 64}
    for name, scaling, config, flags, needles in (
            ("an unknown rope_type", {"rope_type": "ntk", "factor": 2.0}, {}, [],
             ["rope_type 'ntk' is not a RoPE scaling emha knows"]),
            ("a key llama3 does not read", dict(llama3, alpha=2.0), {}, [],
             ["(llama3) has alpha, which transformers' llama3 scaling does not read"]),
            ("llama3 without low_freq_factor",
             {k: v for k, v in llama3.items() if k != "low_freq_factor"}, {}, [],
             ["(llama3) needs low_freq_factor"]),
            ("dynamic past max_position_embeddings", {"type": "dynamic", "factor": 2.0},
             {"max_position_embeddings": 16}, ["--max-seq-q", "32"],
             ["(dynamic): the layer's 32 positions", "exceed 16"]),
            ("longrope past original_max_position_embeddings",
             {"rope_type": "longrope", "short_factor": [1.0] * 4, "long_factor": [2.0] * 4},
             {"max_position_embeddings": 256, "original_max_position_embeddings": 16}, [],
             ["(longrope): the layer's 64 positions", "exceed 16", "long_factor"]),
            ("longrope short_factor of the wrong length",
             {"rope_type": "longrope", "short_factor": [1.0] * 3, "long_factor": [2.0] * 3},
             {"max_position_embeddings": 256, "original_max_position_embeddings": 128}, [],
             ["short_factor must list 4 factors", "not 3"])):
        cases.append((f"rope scaling: {name} refused by name",
                      llama_folder(rope_scaling=scaling, **config), layer + flags, needles))
    for model_type, key, value, what in (
            ("olmo", "clip_qkv", 8.0, "OLMo's clamp of q, k and v"),
            ("stablelm", "qk_layernorm", True, "StableLM's QK LayerNorm"),
            ("phi", "qk_layernorm", True, "Phi's QK LayerNorm"),
            ("cohere", "use_qk_norm", True, "Cohere's QK LayerNorm"),
            ("bloom", "apply_residual_connection_post_layernorm", True,
             "BLOOM's residual from the input_layernorm's output"),
            ("falcon", "alibi", True, "Falcon's ALiBi")):
        cases.append((f"{model_type}'s {key} refused by name",
                      llama_folder(model_type=model_type, **{key: value}), layer,
                      [f"{key} = {value} (model_type {model_type})", what, "not supported"]))
    cases += feature_cases(layer)
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


def qwen3_folder(q_norm=8, k_norm=8, **config):
    """Layer 0 of a Qwen3-style model: 4 heads x head_dim 8 over hidden 24, 2 K/V heads, per-head
    q_norm / k_norm (shapes as given; None leaves them out)."""
    f = llama_folder(24, 4, 2, q_rows=32, **dict(dict(model_type="qwen3", head_dim=8), **config))
    for name, n in (("q_norm", q_norm), ("k_norm", k_norm)):
        if n is not None:
            f.tensors[f"model.layers.0.self_attn.{name}.weight"] = torch.rand(n) + 0.5
    return f


def t5_folder(heads=4, table_rows=8, table_heads=4, with_table=True, stacks=("encoder",)):
    """T5 blocks 0 and 1 of the stacks: SelfAttention q/k/v [heads x 8, 16], o [16, heads x 8],
    block 0's relative_attention_bias [table_rows, table_heads], layer_norm [16]."""
    t = {}
    for stack in stacks:
        for i in (0, 1):
            p = f"{stack}.block.{i}.layer.0"
            for n in "qkv":
                t[f"{p}.SelfAttention.{n}.weight"] = torch.randn(heads * 8, 16) * 0.2
            t[f"{p}.SelfAttention.o.weight"] = torch.randn(16, heads * 8) * 0.2
            t[f"{p}.layer_norm.weight"] = torch.rand(16) + 0.5
            if i == 0 and with_table:
                t[f"{p}.SelfAttention.relative_attention_bias.weight"] = \
                    torch.randn(table_rows, table_heads)
    return HfFolder(dict(model_type="t5", d_model=16, d_kv=8, num_heads=heads,
                         relative_attention_num_buckets=8, relative_attention_max_distance=6,
                         layer_norm_epsilon=1e-6), t)


def gpt2_folder(**config):
    """GPT-2 layers 0 and 1: h.N.attn.c_attn [32, 96] (Conv1D [in, out]) and c_proj [32, 32]."""
    t = {}
    for i in (0, 1):
        t[f"h.{i}.attn.c_attn.weight"] = torch.randn(32, 96) * 0.2
        t[f"h.{i}.attn.c_attn.bias"] = torch.rand(96) - 0.5
        t[f"h.{i}.attn.c_proj.weight"] = torch.randn(32, 32) * 0.2
        t[f"h.{i}.attn.c_proj.bias"] = torch.rand(32) - 0.5
    return HfFolder(dict(dict(model_type="gpt2", n_embd=32, n_head=4, n_layer=2), **config), t)


def blog_state(d_model, heads):
    m = nn.Module()
    for n in ("linear_q", "linear_k", "linear_v", "linear_final"):
        m.add_module(n, nn.Linear(d_model, d_model))
    m.layer_norm = nn.LayerNorm(d_model)
    return holder("attn", m)


def feature_cases(layer):
    """head_dim, QK-norm, the score scale, T5's relative bias, the blog's head split: what the
    exporter still refuses, by name."""
    cases = []
    gemma = dict(model_type="gemma3_text", head_dim=8, query_pre_attn_scalar=8,
                 rope_local_base_freq=10000.0, sliding_window=4,
                 layer_types=["full_attention", "sliding_attention"], rms_norm_eps=1e-6)
    cases.append(("attn_logit_softcapping outside Gemma refused by name",
                  llama_folder(attn_logit_softcapping=50.0), layer,
                  ["attn_logit_softcapping = 50.0 with model_type llama",
                   "only Gemma 2's and Gemma 3's attention read it"]))
    cases.append(("Gemma 3's bidirectional attention refused by name",
                  qwen3_folder(**dict(gemma, use_bidirectional_attention=True)), layer,
                  ["use_bidirectional_attention", "not supported"]))
    cases.append(("query_pre_attn_scalar outside Gemma refused by name",
                  llama_folder(query_pre_attn_scalar=64), layer,
                  ["query_pre_attn_scalar", "model_type llama", "Gemma"]))
    cases.append(("--scale disagreeing with query_pre_attn_scalar",
                  qwen3_folder(**dict(gemma, query_pre_attn_scalar=16)), layer + ["--scale", "0.5"],
                  ["--scale 0.5", "query_pre_attn_scalar", "0.25"]))
    cases.append(("QK-norm model_type without q_norm/k_norm", qwen3_folder(None, None), layer,
                  ["model_type qwen3 has QK-norm (per_head)", "q_norm.weight", "missing"]))
    cases.append(("q_norm/k_norm in a model_type without QK-norm",
                  qwen3_folder(model_type="qwen2"), layer,
                  ["q_norm.weight (QK-norm)", "model_type qwen2", "not a known QK-norm model"]))
    cases.append(("q_norm of the wrong width", qwen3_folder(q_norm=7), layer,
                  ["model.layers.0.self_attn.q_norm.weight", "[7]", "[8]", "per_head"]))
    cases.append(("OLMo-2 without q_norm/k_norm",
                  llama_folder(32, 4, 2, model_type="olmo2"), layer, ["q_norm.weight", "missing"]))
    olmo = llama_folder(32, 4, 2, model_type="olmo2", rms_norm_eps=1e-5)
    olmo.tensors["model.layers.0.self_attn.q_norm.weight"] = torch.ones(32)
    olmo.tensors["model.layers.0.self_attn.k_norm.weight"] = torch.ones(8)
    cases.append(("OLMo-2 k_norm not over the whole K projection", olmo, layer,
                  ["k_norm.weight", "[8]", "[16]", "whole projection"]))
    bare = qwen3_folder()
    cases.append(("QK-norm without config.json needs its eps", bare.tensors,
                  ["--prefix", "model.layers.0.self_attn", "--heads", "4"],
                  ["QK-norm needs --qk-norm-eps", "rms_norm_eps"]))
    cases.append(("head_dim in config.json disagreeing with q_proj's rows",
                  qwen3_folder(head_dim=16), layer,
                  ["q_proj.weight", "[32, 24]", "4 heads x head_dim 16 = 64 rows"]))
    cases.append(("--head-dim disagreeing with config.json", qwen3_folder(), layer +
                  ["--head-dim", "4"], ["--head-dim 4", "config.json head_dim = 8"]))
    cases.append(("T5 without block 0's relative_attention_bias", t5_folder(with_table=False),
                  ["--layer", "1"], ["encoder.block.0.layer.0.SelfAttention.relative_attention_bias"
                                     ".weight", "missing"]))
    cases.append(("T5 relative_attention_bias of the wrong shape", t5_folder(table_heads=3),
                  ["--layer", "1"], ["relative_attention_bias.weight", "[8, 3]", "[8, 4]"]))
    cases.append(("T5 --layer N in both stacks", t5_folder(stacks=("encoder", "decoder")),
                  ["--layer", "1"], ["--layer 1 matches 2", "--layer decoder.1 or encoder.1"]))
    longt5 = t5_folder()
    longt5.config["model_type"] = "longt5"
    for mt, what in (("deberta-v2", "disentangled attention"),
                     ("deepseek_v3", "multi-head latent attention"),
                     ("longformer", "global tokens")):
        cases.append((f"{mt} refused by name", llama_folder(model_type=mt), layer,
                      [f"model_type {mt}", what, "not supported"]))
    cases.append(("LongT5 refused by name", longt5, ["--layer", "1"],
                  ["longt5", "transient-global", "not supported"]))
    # MiniCPM: Llama's names, with its own scale_depth and dim_model_base the exporter has not
    # checked against its module.
    cases.append(("an unknown model_type refused by name",
                  llama_folder(model_type="minicpm", scale_depth=1.4, dim_model_base=256), layer,
                  ["model_type minicpm", "not a model the exporter knows", "--family"]))
    cases.append(("--position relative_bias outside T5", llama_folder(), layer +
                  ["--position", "relative_bias"], ["--position relative_bias", "T5"]))
    cases.append(("--head-split flat_view with RoPE", llama_folder(), layer +
                  ["--head-split", "flat_view"], ["--head-split flat_view has no positions"]))
    cases.append(("GPT-2's per-layer scale without --layer",
                  gpt2_folder(scale_attn_by_inverse_layer_idx=True), ["--prefix", "h.1.attn"],
                  ["scale_attn_by_inverse_layer_idx", "give --layer N"]))
    cases.append(("the blog's scale with d_k // heads = 0", blog_state(16, 8), ["--heads", "8"],
                  ["(d_k // heads) ** -0.5", "d_k 2 and 8 heads", "--scale"]))
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
    want = dict(version=2, header_bytes=160, head_dim=4, scale=0.0, qk_norm=0, head_split=0,
                relative_buckets=0)
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
    return problems, f"magic EMHA, version 2, {len(data)} bytes, crc32 {crc:#010x}, 6 tensors"


def check_accepted(tmp):
    """What must export: a torchscale module's own state_dict with an empty --prefix (its
    xpos.scale buffer is not the layer's), and safetensors F16 / BF16 tensors read exactly."""
    sys.path.insert(0, str(HERE.parent / "attention"))
    from gen_seed_fixtures import TorchscaleMHA
    results = []
    torch.manual_seed(3)
    torch.save(TorchscaleMHA(16, 2, xpos=True, subln=True).state_dict(), tmp / "ts.pt")
    # Its xpos.scale buffer makes it xPos; the scale base is not in it: assumed aloud, or given.
    for extra, said in (([], "assumed: xpos scale base 512 (torchscale's default"),
                        (["--xpos-scale-base", "256"], "xpos (scale base 256)")):
        done = run_exporter(tmp / "ts.pt", ["--prefix", "", "--heads", "2", "--norm", "sub"] + extra, tmp)
        ok = done.returncode == 0 and "emha-export: proj ''" in done.stdout and said in done.stdout \
            and (extra == [] or "assumed" not in done.stdout)
        results.append((f"torchscale saved on its own, empty --prefix {' '.join(extra)}".rstrip(),
                        [] if ok else [f"exit {done.returncode}: {done.stdout.strip()} {done.stderr.strip()}"],
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
    results += feature_accepted(tmp)
    results += int8_cases.accepted(tmp, run_exporter)
    return results


def exported(tmp, folder_or_state, flags, needles, blob_fields=None, name="feature"):
    """(problems, stdout): the export succeeds, its line holds `needles`, its blob these fields."""
    if isinstance(folder_or_state, HfFolder):
        path = write_folder(tmp / name, folder_or_state.config, folder_or_state.tensors)
    else:
        path = tmp / f"{name}.pt"
        torch.save(folder_or_state, path)
    done = run_exporter(path, flags, tmp)
    if done.returncode:
        return [f"exit {done.returncode}: {done.stderr.strip()}"], ""
    problems = [f"stdout lacks {n!r}" for n in needles if n not in done.stdout]
    h, _ = read_blob((tmp / "out.bin").read_bytes())
    problems += [f"blob {k} = {h[k]}, expected {v}" for k, v in (blob_fields or {}).items()
                 if (abs(h[k] - v) > 1e-7 * abs(v) if isinstance(v, float) else h[k] != v)]
    return problems, done.stdout.strip()


def feature_accepted(tmp):
    """What the new features export, and what their line and blob say."""
    results = []
    torch.manual_seed(30)
    gemma = qwen3_folder(model_type="gemma3_text", query_pre_attn_scalar=16,
                         rope_local_base_freq=10000.0, rope_theta=1000000.0, sliding_window=4,
                         rope_scaling={"rope_type": "linear", "factor": 8.0},
                         layer_types=["sliding_attention"], rms_norm_eps=1e-6)
    results.append(("Gemma 3 sliding layer: local RoPE, unscaled by rope_scaling",) + exported(
        tmp, gemma, ["--layer", "0"], ["head_dim 8 (decoupled", "base 10000", "sliding window 4",
                                       "scale 0.25", "x_hat * (1 + w)", "sandwich"],
        dict(head_dim=8, scale=0.25, qk_norm=1, qk_norm_unit_offset=1, qk_norm_eps=1e-6,
             sliding_window=4, position=1)))
    gemma_full = qwen3_folder(model_type="gemma3_text", query_pre_attn_scalar=16,
                              rope_local_base_freq=10000.0, rope_theta=1000000.0,
                              sliding_window=4, rope_scaling={"rope_type": "linear", "factor": 8.0},
                              layer_types=["full_attention"], rms_norm_eps=1e-6)
    results.append(("Gemma 3 full layer: rope_scaling linear, blob version 5",) + exported(
        tmp, gemma_full, ["--layer", "0"], ["base 1e+06, linear scaling: factor 8",
                                            "rope_scaling"],
        dict(version=5, rope_scaling=1, position=1)))
    results.append(("T5 decoder layer 1: block 0's table, causal buckets",) + exported(
        tmp, t5_folder(stacks=("encoder", "decoder")), ["--layer", "decoder.1"],
        ["decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight [8, 4]",
         "causal buckets", "scale 1", "norm pre rms_norm eps 1e-06", "masks.causal"],
        dict(position=4, relative_buckets=8, relative_max_distance=6, relative_bidirectional=0,
             scale=1.0, head_dim=8, norm=2, norm_kind=1)))
    results.append(("GPT-2 scale_attn_weights = false and by inverse layer index, layer 1",) +
                   exported(tmp, gpt2_folder(scale_attn_weights=False,
                                             scale_attn_by_inverse_layer_idx=True),
                            ["--layer", "1"], ["scale 0.5 (config.json scale_attn_weights = false "
                                               "and scale_attn_by_inverse_layer_idx (layer 1))"],
                            dict(scale=0.5)))
    results.append(("GPT-2 scaled by inverse layer index, layer 1",) + exported(
        tmp, gpt2_folder(scale_attn_by_inverse_layer_idx=True), ["--layer", "1"],
        ["scale 0.176776695"], dict(scale=8 ** -0.5 / 2)))
    results.append(("the blog block as written: flat_view and its scale",) + exported(
        tmp, blog_state(16, 2), ["--heads", "2"], ["head split flat_view", "scale 0.5",
                                                   "--head-split columns"],
        dict(head_split=1, scale=0.5, norm=1)))
    results.append(("the blog block with --head-split columns",) + exported(
        tmp, blog_state(16, 2), ["--heads", "2", "--head-split", "columns"],
        ["head split columns (--head-split columns)", "scale 0.5"], dict(head_split=0, scale=0.5)))
    return results


def main():
    """Every case is an exporter process: the refusals run side by side, each in a directory of
    its own, beside the accepted exports (one after another: they share out.bin); results are
    printed in the cases' order."""
    failed = 0

    def say(name, problems, line):
        nonlocal failed
        failed += bool(problems)
        print(f"{'FAIL' if problems else 'ok  '} {name}: {'; '.join(problems) or line}")

    def accepted(tmp):
        return check_accepted(tmp), check_blob(tmp)

    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        tmp = pathlib.Path(tmp)
        (tmp / "accepted").mkdir()
        exports = pool.submit(accepted, tmp / "accepted")  # the longest chain: first
        refusals = []
        for i, (name, obj, flags, needles) in enumerate(bad_cases()):
            (tmp / f"refusal{i}").mkdir()
            refusals.append((name, pool.submit(check_refusal, name, obj, flags, needles, tmp / f"refusal{i}")))
        for name, refusal in refusals:
            say(name, *refusal.result())
        results, (problems, line) = exports.result()
        for name, problems_, line_ in results:
            say(name, problems_, line_)
        say("blob written and read back", problems, line)
    print(f"{failed} failed" if failed else "all passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

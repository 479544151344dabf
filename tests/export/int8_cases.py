# SPDX-License-Identifier: Apache-2.0
"""The exporter's int8 weights (emha_export.py --weights int8), run by test_export_errors.py:
refusals of a checkpoint's own int8 weights (one stderr line naming the tensor), and what exports:
the printed error and size lines, a version 3 blob read back by read_blob.py with int8 values equal
to this file's own quantization (amax / 127, round half to even, [-127, 127]; a zero row: scale 1),
a checkpoint's int8 weights and scales bit for bit (.pt and safetensors), the C++ header's arrays."""
import re

import numpy as np
import torch
from torch import nn

from hf_checkpoint import write_safetensors
from read_blob import read_blob


def proj_state(d_model=16, kv_rows=16, bias=True):
    """attn.{q,k,v,o}_proj.weight / .bias of the proj family, float32."""
    m = nn.Module()
    for name, rows, cols in (("q_proj", d_model, d_model), ("k_proj", kv_rows, d_model),
                             ("v_proj", kv_rows, d_model), ("o_proj", d_model, d_model)):
        m.add_module(name, nn.Linear(cols, rows, bias=bias))
    return {f"attn.{k}": v.detach() for k, v in m.state_dict().items()}


def quantize_rows(w):
    """(q int8, scale float32 [rows]): PRIOR-ART's scheme, written here apart from the exporter."""
    w = w.detach().float()
    amax = w.abs().amax(dim=1)
    scale = torch.where(amax == 0, torch.ones_like(amax), amax / 127)
    return torch.round(w / scale[:, None]).clamp(-127, 127).to(torch.int8), scale


def int8_state(d_model=16, kv_rows=16):
    """proj_state with every projection weight replaced by int8 + weight_scale."""
    state = proj_state(d_model, kv_rows)
    for r in ("q", "k", "v", "o"):
        q, scale = quantize_rows(state[f"attn.{r}_proj.weight"])
        state[f"attn.{r}_proj.weight"], state[f"attn.{r}_proj.weight_scale"] = q, scale
    return state


def refusals():
    """(check name, checkpoint, flags, substrings stderr must hold), as test_export_errors's."""
    torch.manual_seed(8)
    cases = []
    s = int8_state()
    s["attn.q_proj.weight"][2, 3] = -128
    cases.append(("int8: a weight of -128", s, ["--heads", "2", "--weights", "int8"],
                  ["attn.q_proj.weight holds -128", "[2, 3]", "[-127, 127]"]))
    s = int8_state()
    del s["attn.k_proj.weight_scale"]
    cases.append(("int8: a weight without its scale", s, ["--heads", "2", "--weights", "int8"],
                  ["attn.k_proj.weight is int8 but attn.k_proj.weight_scale is missing"]))
    for bad, said in ((0.0, "is 0.0"), (-1.0, "is -1.0"), (float("inf"), "is inf"),
                      (float("nan"), "is nan")):
        s = int8_state()
        s["attn.v_proj.weight_scale"][5] = bad
        cases.append((f"int8: a scale {said[3:]}", s, ["--heads", "2", "--weights", "int8"],
                      [f"attn.v_proj.weight_scale[5] {said}", "finite and > 0"]))
    s = int8_state()
    s["attn.o_proj.weight_scale"] = s["attn.o_proj.weight_scale"][:8]
    cases.append(("int8: a scale of the wrong length", s, ["--heads", "2", "--weights", "int8"],
                  ["attn.o_proj.weight_scale is float32 [8]", "expected float [16]",
                   "attn.o_proj.weight [16, 16]"]))
    s = int8_state()
    s["attn.o_proj.weight_scale"] = s["attn.o_proj.weight_scale"].to(torch.int32)
    cases.append(("int8: a scale that is not float", s, ["--heads", "2", "--weights", "int8"],
                  ["attn.o_proj.weight_scale is int32 [16]", "expected float [16]"]))
    s = int8_state()
    s["attn.v_proj.weight"] = s["attn.v_proj.weight"].float() * s.pop("attn.v_proj.weight_scale")[:, None]
    cases.append(("int8: some projections int8, others float", s,
                  ["--heads", "2", "--weights", "int8"],
                  ["attn.q_proj.weight is int8 but attn.v_proj.weight is float", "all four"]))
    s = int8_state()
    s["attn.q_proj.bias"] = torch.zeros(16, dtype=torch.int8)
    cases.append(("int8: a bias", s, ["--heads", "2", "--weights", "int8"],
                  ["attn.q_proj.bias is int8 with shape [16]", "only the projections' weights"]))
    cases.append(("int8: a checkpoint's int8 weights without --weights int8", int8_state(),
                  ["--heads", "2"], ["attn.", "is int8", "--weights int8"]))
    return cases


def accepted(tmp, run_exporter):
    """(check name, problems, line) of the int8 exports that must succeed."""
    results = []
    torch.manual_seed(9)
    # A float nn.MultiheadAttention(16, 4) quantized: one zero row, one row whose values land on
    # halves of its scale (127 / 127 = 1: 0.5, 1.5, 2.5, -2.5 round to 0, 2, 2, -2).
    m = nn.MultiheadAttention(16, 4)
    state = {f"attn.{k}": v.detach().clone() for k, v in m.state_dict().items()}
    w = state["attn.in_proj_weight"]
    w[7] = 0
    w[8] = 0
    w[8, :5] = torch.tensor([127.0, 0.5, 1.5, 2.5, -2.5])
    torch.save(state, tmp / "f32.pt")
    done = run_exporter(tmp / "f32.pt", ["--heads", "4", "--weights", "int8", "--reference-rows",
                                         "3", "--header", str(tmp / "q.hpp"), "--blob",
                                         str(tmp / "q.bin")], tmp)
    problems = [] if done.returncode == 0 else [f"exit {done.returncode}: {done.stderr.strip()}"]
    lines = done.stdout.strip().splitlines()
    if not problems:
        want = [r"^emha-export: int8 in_proj_weight \[48, 16\]: max \|w - q\*s\| / max \|w\| "
                r"[0-9.e+-]+, rms\(w - q\*s\) / rms\(w\) [0-9.e+-]+; 3072 -> 960 B \(int8 \+ "
                r"scales\), 2112 B saved; 1 zero rows \(scale 1, all zeros\)$",
                r"^emha-export: int8 out_proj_weight \[16, 16\]: .* 1024 -> 320 B \(int8 \+ "
                r"scales\), 704 B saved$",
                r"^emha-export: int8 weights move the reference output by max ([0-9.e+-]+) "
                r"\(max \|float output\| [0-9.e+-]+\), rms [0-9.e+-]+ .*against the float module$",
                r"^emha-export: nn_mha 'attn' .*; weights int8 per output channel"]
        if len(lines) != 4 or not all(re.search(p, line) for p, line in zip(want, lines)):
            problems.append(f"stdout is not the 4 expected lines: {lines}")
        else:
            problems += output_moved(tmp / "q.bin", state, float(re.search(want[2], lines[2])[1]))
        problems += blob_matches(tmp / "q.bin", state)
        problems += header_matches((tmp / "q.hpp").read_text())
    results.append(("int8: --weights int8 quantizes (zero row, halves to even), prints errors and "
                    "bytes", problems, " | ".join(lines[:2])))

    # A checkpoint's own int8 weights, .pt (proj family) and safetensors (nn_mha's in_proj).
    torch.manual_seed(10)
    own = int8_state(16, 8)
    torch.save(own, tmp / "own.pt")
    done = run_exporter(tmp / "own.pt", ["--heads", "2", "--kv-heads", "1", "--weights", "int8"],
                        tmp)
    problems = [] if done.returncode == 0 else [f"exit {done.returncode}: {done.stderr.strip()}"]
    if not problems:
        _, t = read_blob((tmp / "out.bin").read_bytes())
        # kdim = vdim = d_model: one in_proj, rows q | k | v, and their scales in that order
        problems += same(t, 18, 24, torch.cat([own[f"attn.{r}_proj.weight"] for r in "qkv"]),
                         torch.cat([own[f"attn.{r}_proj.weight_scale"] for r in "qkv"]),
                         "attn.q/k/v_proj concatenated")
        problems += same(t, 22, 28, own["attn.o_proj.weight"], own["attn.o_proj.weight_scale"],
                         "attn.o_proj")
        if "the checkpoint's int8 and scales, bit for bit" not in done.stdout:
            problems.append(f"stdout: {done.stdout.strip()}")
    results.append(("int8: a checkpoint's int8 q/k/v/o_proj + weight_scale (GQA), bit for bit",
                    problems, done.stdout.strip().splitlines()[0] if done.stdout else ""))
    m = nn.MultiheadAttention(16, 2)
    st = {f"attn.{k}": v.detach() for k, v in m.state_dict().items()}
    for name in ("attn.in_proj_weight", "attn.out_proj.weight"):
        st[name], st[name + "_scale"] = quantize_rows(st[name])
    write_safetensors(tmp / "own.safetensors", st)
    done = run_exporter(tmp / "own.safetensors", ["--heads", "2", "--weights", "int8"], tmp)
    problems = [] if done.returncode == 0 else [f"exit {done.returncode}: {done.stderr.strip()}"]
    if not problems:
        _, t = read_blob((tmp / "out.bin").read_bytes())
        problems += same(t, 18, 24, st["attn.in_proj_weight"], st["attn.in_proj_weight_scale"],
                         "attn.in_proj_weight")
        problems += same(t, 22, 28, st["attn.out_proj.weight"], st["attn.out_proj.weight_scale"],
                         "attn.out_proj.weight")
    results.append(("int8: safetensors I8 in_proj_weight + in_proj_weight_scale, bit for bit",
                    problems, done.stdout.strip().splitlines()[-1] if done.stdout else ""))
    return results


def same(t, qid, sid, q, scale, what):
    if qid not in t or sid not in t:
        return [f"{what}: ids {qid} / {sid} missing from the blob ({sorted(t)})"]
    problems = []
    if not np.array_equal(t[qid], q.numpy()):
        problems.append(f"{what}: the blob's int8 differ")
    if not np.array_equal(t[sid][:, 0].view(np.uint32), scale.float().numpy().view(np.uint32)):
        problems.append(f"{what}: the blob's scales differ")
    return problems


def blob_matches(path, state):
    """The quantized blob: version 3, weight_type 1, its ids, values as quantize_rows'."""
    h, t = read_blob(path.read_bytes())
    problems = [f"{k} = {h[k]}, expected {v}" for k, v in
                dict(version=3, weight_type=1, tensor_count=8).items() if h[k] != v]
    if sorted(t) != [5, 7, 16, 17, 18, 22, 24, 28]:
        return problems + [f"tensor ids {sorted(t)}, expected [5, 7, 16, 17, 18, 22, 24, 28]"]
    q, scale = quantize_rows(state["attn.in_proj_weight"])
    problems += same(t, 18, 24, q, scale, "in_proj_weight")
    if list(t[18][8, :5]) != [127, 0, 2, 2, -2] or t[24][8, 0] != 1.0:
        problems.append(f"row 8: {list(t[18][8, :5])} scale {t[24][8, 0]}, expected "
                        "[127, 0, 2, 2, -2] scale 1")
    if t[18][7].any() or t[24][7, 0] != 1.0:
        problems.append("the zero row 7: not all zeros with scale 1")
    problems += same(t, 22, 28, *quantize_rows(state["attn.out_proj.weight"]), "out_proj.weight")
    return problems


def output_moved(path, state, printed):
    """The printed max |int8 - float| on the reference input: the blob's reference (the
    dequantized layer's output) against torch's own float64 nn.MultiheadAttention(16, 4) on the
    float weights, to the 4 digits printed."""
    _, t = read_blob(path.read_bytes())
    m = nn.MultiheadAttention(16, 4).double()
    m.load_state_dict({k[len("attn."):]: v.double() for k, v in state.items()})
    x = torch.from_numpy(t[16]).double()[:, None, :]  # [rows, batch 1, 16]
    with torch.no_grad():
        out_float = m(x, x, x, need_weights=False)[0][:, 0, :]
    moved = float((torch.from_numpy(t[17]).double() - out_float).abs().max())
    if not 0 < moved or abs(printed - moved) > 1e-3 * moved:
        return [f"printed max {printed:.3e}, torch's float module gives {moved:.3e}"]
    return []


def header_matches(text):
    """The header: int8 arrays with static_asserts, float scales, weights() filling the spans."""
    needles = ["#include <cstdint>",
               "static constexpr emha::WeightType weight_type = emha::WeightType::int8;",
               "alignas(64) inline constexpr std::int8_t in_proj_weight_int8[768] = {",
               "static_assert(sizeof(in_proj_weight_int8) / sizeof(std::int8_t) == "
               "(q_dim + 2 * kv_dim) * Config::d_model,",
               "alignas(64) inline constexpr float in_proj_weight_scale[48] = {",
               "w.in_proj_weight_int8 = in_proj_weight_int8;",
               "w.out_proj_weight_scale = out_proj_weight_scale;"]
    problems = [f"the header lacks {n!r}" for n in needles if n not in text]
    if "w.in_proj_weight = " in text or "float in_proj_weight[" in text:
        problems.append("the header holds the float in_proj_weight")
    return problems

#!/usr/bin/python3
"""emha-export: one attention layer of a PyTorch checkpoint -> emha's weight blob and/or C++ header.

Reads CHECKPOINT (torch.load): a state_dict saved with torch.save(model.state_dict(), ...), a dict
holding one under "state_dict", or a whole module saved with torch.save(model, ...). The layer's
tensors are the ones under --prefix P (P = "" for a module's own state_dict). Its naming family:

  nn_mha    torch.nn.MultiheadAttention: P.in_proj_weight, or P.q_proj_weight / k_proj_weight /
            v_proj_weight (kdim or vdim != embed_dim); P.in_proj_bias; P.out_proj.weight / .bias.
            add_bias_kv (P.bias_k / P.bias_v) is refused.
  proj      P.q_proj, P.k_proj, P.v_proj, P.out_proj (or HF's P.o_proj), .weight / .bias
            (torchscale, HF Llama/Mistral; GQA: k_proj/v_proj have kv_heads * d_k rows)
  labml     labml.ai: P.query.linear, P.key.linear, P.value.linear, P.output
  linear    P.linear_q, P.linear_k, P.linear_v, P.linear_final (+ P.layer_norm, post-LN by default)
  per_head  lists of per-head linears P.q_heads.i / P.k_heads.i / P.v_heads.i (or P.Wq.i / Wk.i /
            Wv.i), concatenated in head order; output P.output_linear (or P.Wo, P.out)

--family auto (the default) picks the family by the tensors present. What the tensors cannot say
comes from flags or, for a whole module, from its attributes (num_heads, LayerNorm eps,
TransformerEncoderLayer.norm_first, torchscale's xpos); a flag that disagrees with an attribute is
an error. Sizes come from the tensors: d_model from Q, kdim / vdim from the K / V weights'
columns, kv_heads from the K rows (checked against --kv-heads). Every inconsistency is an error:
exit status 1 and one line on stderr naming the tensor and both shapes; nothing is guessed (a
transposed tensor, a head count that does not divide d_model, a per-head list that is not --heads
long, a tensor under the prefix that the export would not use, a non-finite weight).

Outputs (see lib/include/emha/io/weight_blob.hpp for the blob format):
  --blob OUT.bin    the blob: header, tensor table in id order, float32 little-endian tensors at
                    64-byte aligned offsets, CRC-32. Layout 0 (PyTorch row-major) is the only
                    layout written today; the packed-panel layouts are reserved.
  --header OUT.hpp  namespace NAME { struct Config : emha::MhaConfig<...> (every member set);
                    alignas(64) inline constexpr float arrays as exact hex-float literals, tied to
                    Config by static_asserts; emha::MhaWeights weights(); the reference, if any }
  --reference-rows N  (kdim == vdim == d_model) a seeded input [N, d_model] (uniform(-1, 1)) and
                    the layer's output on it (self-attention, batch 1, --reference-causal, the
                    sliding window), computed here in float64 with emha's semantics, stored as
                    float32: emha-run's check. Scores are always scaled by 1/sqrt(d_k), emha's
                    default: a module with another scale (the blog encoder's quirk) passes
                    ForwardOptions::scale at run time, and its reference differs from the module.

Examples:
  emha_export.py attn.pt --prefix layers.0.self_attn --heads 8 --blob attn.bin --header attn.hpp
  emha_export.py encoder.pt --prefix layers.0.self_attn --norm post --norm-prefix layers.0.norm1 \\
      --blob enc.bin                                  # nn.TransformerEncoderLayer, post-LN
  emha_export.py llama.pt --prefix model.layers.0.self_attn --heads 32 --kv-heads 8 \\
      --position rope --rope-base 500000 --norm pre --norm-kind rms_norm \\
      --norm-prefix model.layers.0.input_layernorm --norm-eps 1e-5 --header llama0.hpp
  emha_export.py ts.pt --prefix attn --heads 4 --position xpos --norm sub --reference-rows 8 \\
      --blob ts.bin                                    # torchscale: xPos, sub-LN inner_attn_ln
"""
import argparse
import math
import pathlib
import re
import struct
import sys
import zlib

import numpy as np
import torch

POSITION = {"none": 0, "rope": 1, "xpos": 2, "alibi": 3}
PAIRING = {"half": 0, "interleaved": 1}
NORM = {"none": 0, "post": 1, "pre": 2, "sub": 3}
NORM_KIND = {"layer_norm": 0, "rms_norm": 1}
BLOB_ID = dict(in_proj_weight=1, q_proj_weight=2, k_proj_weight=3, v_proj_weight=4, in_proj_bias=5,
               out_proj_weight=6, out_proj_bias=7, norm_weight=8, norm_bias=9, ref_input=16,
               ref_output=17)
HEADS_ATTRS = ("num_heads", "heads", "n_heads", "num_attention_heads")
KV_HEADS_ATTRS = ("num_key_value_heads", "kv_heads", "n_kv_heads")


class ExportError(Exception):
    pass


def fail(message):
    raise ExportError(message)


def shape_str(shape):
    return "[" + ", ".join(str(int(s)) for s in shape) + "]"


def join(prefix, name):
    return f"{prefix}.{name}" if prefix else name


# --------------------------------------------------------------------------------------------------
# Reading the checkpoint

class Checkpoint:
    """The checkpoint's tensors by name (float32, detached), the module if it was one, and which
    names the export has used (the rest under the prefix is an error: nothing is ignored)."""

    def __init__(self, path):
        obj = torch.load(path, map_location="cpu")
        self.module = obj if isinstance(obj, torch.nn.Module) else None
        if self.module is not None:
            state = self.module.state_dict()
        elif isinstance(obj, dict) and isinstance(obj.get("state_dict"), dict):
            state = obj["state_dict"]
        elif isinstance(obj, dict):
            state = obj
        else:
            fail(f"{path}: neither a state_dict nor a module (a {type(obj).__name__})")
        self.tensors = {k: v for k, v in state.items() if isinstance(v, torch.Tensor)}
        self.used = set()

    def has(self, name):
        return name in self.tensors

    def under(self, prefix):
        return sorted(n for n in self.tensors if not prefix or n.startswith(prefix + "."))

    def found(self, prefix):
        names = self.under(prefix)
        shown = ", ".join(names[:24]) + (f", ... ({len(names)} in all)" if len(names) > 24 else "")
        return f"found under '{prefix}': {shown}" if names else f"nothing is under '{prefix}'"

    def get(self, name, prefix):
        """The tensor `name` as float32 (missing: an error listing what is under `prefix`)."""
        if name not in self.tensors:
            fail(f"{name} is missing; {self.found(prefix)}")
        self.used.add(name)
        t = self.tensors[name].detach().to(torch.float32).contiguous()
        bad = ~torch.isfinite(t)
        if bool(bad.any()):
            first = [int(i) for i in bad.nonzero()[0]]
            fail(f"{name} has shape {shape_str(t.shape)} and {int(bad.sum())} non-finite values "
                 f"(the first at {first}, {float(self.tensors[name].reshape(-1)[bad.reshape(-1)][0])})")
        return t

    def optional(self, name, prefix):
        return self.get(name, prefix) if name in self.tensors else None

    def submodule(self, path):
        if self.module is None:
            return None
        try:
            return self.module.get_submodule(path)
        except AttributeError:
            return None


def int_attr(module, names):
    for n in names:
        v = getattr(module, n, None)
        if isinstance(v, int) and not isinstance(v, bool):
            return n, v
    return None, None


def agree(flag, value, where):
    """A flag's value when given, else the module attribute's; an error when both differ."""
    if flag is not None and value is not None and flag != value:
        fail(f"{where[0]} {flag} disagrees with {where[1]} = {value}")
    return flag if flag is not None else value


# --------------------------------------------------------------------------------------------------
# Families: each returns the layer's tensors as {role: (source name, tensor)}, roles q, k, v, o
# (weights [out, in]) and qb, kb, vb, ob (biases, absent ones left out)

def read_linear(ck, p, roles, names):
    """roles[i] <- P.names[i].weight (and .bias when present)."""
    parts = {}
    for role, name in zip(roles, names):
        parts[role] = (join(p, name + ".weight"), ck.get(join(p, name + ".weight"), p))
        b = join(p, name + ".bias")
        if ck.has(b):
            parts[role + "b"] = (b, ck.get(b, p))
    return parts


def family_nn_mha(ck, p, heads):
    for extra in ("bias_k", "bias_v"):
        if ck.has(join(p, extra)):
            fail(f"{join(p, extra)}: add_bias_kv=True is not supported by emha "
                 "(a learned key/value row appended to every sequence)")
    parts = read_linear(ck, p, ["o"], ["out_proj"])
    if ck.has(join(p, "in_proj_weight")):
        name = join(p, "in_proj_weight")
        w = ck.get(name, p)
        if w.dim() != 2:
            fail(f"{name} has shape {shape_str(w.shape)}, expected a matrix")
        o = parts["o"][1]  # square [d_model, d_model]: says d_model even if in_proj is transposed
        d = o.shape[0] if o.dim() == 2 and o.shape[0] == o.shape[1] else w.shape[1]
        if tuple(w.shape) != (3 * d, d):
            fail(f"{name} has shape {shape_str(w.shape)}, expected {shape_str((3 * d, d))} "
                 f"(3 x d_model {d} rows, d_model {d} columns; d_model from {parts['o'][0]})")
        for i, role in enumerate("qkv"):
            parts[role] = (f"{name} rows {i * d}..{(i + 1) * d - 1}", w[i * d:(i + 1) * d])
    else:
        for role in "qkv":
            name = join(p, f"{role}_proj_weight")
            parts[role] = (name, ck.get(name, p))
    bname = join(p, "in_proj_bias")
    if ck.has(bname):
        b = ck.get(bname, p)
        d = parts["q"][1].shape[0]
        if tuple(b.shape) != (3 * d,):
            fail(f"{bname} has shape {shape_str(b.shape)}, expected {shape_str((3 * d,))} "
                 f"(3 x d_model {d})")
        for i, role in enumerate("qkv"):
            parts[role + "b"] = (f"{bname} {i * d}..{(i + 1) * d - 1}", b[i * d:(i + 1) * d])
    return parts


def family_proj(ck, p, heads):
    out = "o_proj" if ck.has(join(p, "o_proj.weight")) else "out_proj"
    return read_linear(ck, p, ["q", "k", "v", "o"], ["q_proj", "k_proj", "v_proj", out])


def family_labml(ck, p, heads):
    return read_linear(ck, p, ["q", "k", "v", "o"],
                       ["query.linear", "key.linear", "value.linear", "output"])


def family_linear(ck, p, heads):
    return read_linear(ck, p, ["q", "k", "v", "o"],
                       ["linear_q", "linear_k", "linear_v", "linear_final"])


PER_HEAD_LISTS = (("q_heads", "k_heads", "v_heads"), ("Wq", "Wk", "Wv"))


def head_list(ck, p, name, expected, flag):
    """The per-head linears P.name.0 .. : (weight, bias or None) each, exactly `expected` of them."""
    n = 0
    while ck.has(join(p, f"{name}.{n}.weight")):
        n += 1
    if n != expected:
        fail(f"{join(p, name)} has {n} entries ({name}.0 .. {name}.{n - 1}), expected {expected} "
             f"({flag} {expected})")
    return [(ck.get(join(p, f"{name}.{i}.weight"), p), ck.optional(join(p, f"{name}.{i}.bias"), p))
            for i in range(n)]


def family_per_head(ck, p, heads, kv_heads):
    lists = next((l for l in PER_HEAD_LISTS if ck.has(join(p, l[0] + ".0.weight"))), None)
    if lists is None:
        fail(f"{join(p, 'q_heads.0.weight')} (or Wq.0.weight) is missing; {ck.found(p)}")
    parts = {}
    for role, name in zip("qkv", lists):
        count, flag = (heads, "--heads") if role == "q" or not kv_heads else (kv_heads, "--kv-heads")
        entries = head_list(ck, p, name, count, flag)
        shape0 = entries[0][0].shape
        for i, (w, b) in enumerate(entries):
            if w.shape != shape0:
                fail(f"{join(p, f'{name}.{i}.weight')} has shape {shape_str(w.shape)}, expected "
                     f"{shape_str(shape0)} (as {name}.0.weight)")
            if (b is None) != (entries[0][1] is None):
                fail(f"{join(p, f'{name}.{i}.bias')}: some heads of {join(p, name)} have a bias, "
                     "others not")
        src = f"{join(p, name)}.0..{len(entries) - 1}.weight (concatenated)"
        parts[role] = (src, torch.cat([w for w, _ in entries]))
        if entries[0][1] is not None:
            parts[role + "b"] = (src.replace("weight", "bias"), torch.cat([b for _, b in entries]))
    out = next((o for o in ("output_linear", "Wo", "out") if ck.has(join(p, o + ".weight"))), None)
    if out is None:
        fail(f"{join(p, 'output_linear.weight')} (or Wo.weight, out.weight) is missing; {ck.found(p)}")
    parts.update(read_linear(ck, p, ["o"], [out]))
    return parts


FAMILIES = {
    "nn_mha": (("in_proj_weight", "q_proj_weight"), family_nn_mha),
    "proj": (("q_proj.weight",), family_proj),
    "labml": (("query.linear.weight",), family_labml),
    "linear": (("linear_q.weight",), family_linear),
    "per_head": (("q_heads.0.weight", "Wq.0.weight"), None),
}


def detect_family(ck, p, family):
    if family != "auto":
        return family
    found = [f for f, (keys, _) in FAMILIES.items() if any(ck.has(join(p, k)) for k in keys)]
    if len(found) != 1:
        what = "no family's tensors" if not found else "the tensors of " + ", ".join(found)
        fail(f"--family auto: '{p}' holds {what}; {ck.found(p)}")
    return found[0]


# --------------------------------------------------------------------------------------------------
# Shapes: the layer's dims from its tensors, each checked

def expect(entry, shape, why):
    name, t = entry
    if tuple(t.shape) != tuple(shape):
        fail(f"{name} has shape {shape_str(t.shape)}, expected {shape_str(shape)} ({why})")


def layer_dims(parts, heads, kv_flag):
    """d_model, d_k, kv_heads, kdim, vdim from the Q/K/V/O tensors, every shape checked."""
    for role in ("q", "k", "v", "o"):
        name, t = parts[role]
        if t.dim() != 2:
            fail(f"{name} has shape {shape_str(t.shape)}, expected a matrix [out, in]")
    d = parts["q"][1].shape[1]
    expect(parts["q"], (d, d), f"d_model {d} rows and columns: a Linear's [out_features, in_features]")
    if heads <= 0 or d % heads:
        fail(f"--heads {heads} does not divide d_model {d} ({parts['q'][0]} has shape "
             f"{shape_str(parts['q'][1].shape)})")
    d_k = d // heads
    kname, k = parts["k"]
    rows, kdim = k.shape
    if kv_flag is not None:
        kv_heads = kv_flag
        expect(parts["k"], (kv_heads * d_k, kdim),
               f"kv_heads {kv_heads} x d_k {d_k} rows, kdim {kdim} columns")
    else:
        if rows % d_k:
            fail(f"{kname} has shape {shape_str(k.shape)}: {rows} rows are not a multiple of d_k "
                 f"{d_k} (d_model {d} / heads {heads})")
        kv_heads = rows // d_k
    if kv_heads <= 0 or heads % kv_heads:
        fail(f"{kname} has shape {shape_str(k.shape)}: kv_heads {kv_heads} ({rows} rows / d_k "
             f"{d_k}) does not divide heads {heads}")
    vdim = parts["v"][1].shape[1]
    expect(parts["v"], (kv_heads * d_k, vdim),
           f"kv_heads {kv_heads} x d_k {d_k} rows, as {kname}, vdim {vdim} columns")
    expect(parts["o"], (d, d), f"d_model {d} rows and columns")
    for role, width in (("qb", d), ("kb", kv_heads * d_k), ("vb", kv_heads * d_k), ("ob", d)):
        if role in parts:
            expect(parts[role], (width,), f"{width} outputs of its projection")
    return d, d_k, kv_heads, kdim, vdim


# --------------------------------------------------------------------------------------------------
# The norm: placement, kind, eps, affine tensors

def default_norm(ck, args, family, p):
    """(placement, norm prefix) from the flags, the module (TransformerEncoderLayer.norm_first)
    or the family's own norm (linear: P.layer_norm post; proj: P.inner_attn_ln sub)."""
    norm, prefix = args.norm, args.norm_prefix
    parent = p.rpartition(".")[0] if p.endswith("self_attn") and "." in p else ""
    layer = ck.submodule(parent) if p.endswith("self_attn") else None
    if isinstance(layer, torch.nn.TransformerEncoderLayer):
        placement = "pre" if layer.norm_first else "post"
        if norm is not None and norm != placement:
            fail(f"--norm {norm} disagrees with {join(parent, 'norm_first')} = {layer.norm_first} "
                 f"({placement}-LN)")
        norm = placement
        if norm in ("pre", "post") and prefix is None:
            prefix = join(parent, "norm1")
    own = {"linear": ("post", "layer_norm"), "proj": ("sub", "inner_attn_ln")}.get(family)
    if own and ck.has(join(p, own[1] + ".weight")):
        if norm is None:
            norm = own[0]
        if norm == own[0] and prefix is None:
            prefix = join(p, own[1])
    norm = norm or "none"
    if norm != "none" and prefix is None:
        fail(f"--norm {norm} needs --norm-prefix (the norm's tensors, e.g. "
             f"{join(p, 'norm')}.weight); {ck.found(p)}")
    return norm, prefix


def read_norm(ck, args, d, norm, prefix):
    """(kind, eps, affine, weight entry, bias entry) of the norm at `prefix`."""
    kind, eps = args.norm_kind, args.norm_eps
    module = ck.submodule(prefix)
    if module is not None:
        is_ln = isinstance(module, torch.nn.LayerNorm)
        kind = agree(kind, "layer_norm" if is_ln else "rms_norm", ("--norm-kind", f"{prefix} "
                     f"({type(module).__name__})"))
        m_eps = next((getattr(module, a) for a in ("eps", "variance_epsilon")
                      if isinstance(getattr(module, a, None), float)), None)
        eps = agree(eps, m_eps, ("--norm-eps", f"{prefix}.eps"))
    wname, bname = join(prefix, "weight"), join(prefix, "bias")
    w, b = ck.optional(wname, prefix), ck.optional(bname, prefix)
    if kind is None:
        if w is None:
            fail(f"--norm {norm}: {wname} is missing (a norm without weights needs --norm-kind); "
                 f"{ck.found(prefix)}")
        kind = "layer_norm" if b is not None else "rms_norm"
    if kind == "rms_norm" and b is not None:
        fail(f"{bname} has shape {shape_str(b.shape)}, expected none (an RMSNorm has no bias)")
    if kind == "layer_norm" and (w is None) != (b is None):
        have, miss = (wname, bname) if w is not None else (bname, wname)
        fail(f"{have} is present but {miss} is missing (emha's LayerNorm has both or neither)")
    if eps is None:
        if kind == "rms_norm":
            fail(f"--norm-kind rms_norm needs --norm-eps ({prefix}: HF Llama uses 1e-6 or 1e-5; "
                 "a state_dict does not say)")
        eps = 1e-5  # torch.nn.LayerNorm's default
    if eps < 0:
        fail(f"--norm-eps {eps} is negative")
    entries = [(wname, w), (bname, b)]
    for e in entries:
        if e[1] is not None:
            expect(e, (d,), f"d_model {d}")
    return kind, eps, w is not None, entries[0] if w is not None else None, \
        entries[1] if b is not None else None


# --------------------------------------------------------------------------------------------------
# The layer: everything the Config and the blob say

def build_layer(ck, args):
    p = args.prefix
    module = ck.submodule(p)
    heads, kv_flag = args.heads, args.kv_heads
    if module is not None:
        attr, value = int_attr(module, HEADS_ATTRS)
        heads = agree(heads, value, ("--heads", join(p, attr or "num_heads")))
        attr, value = int_attr(module, KV_HEADS_ATTRS)
        kv_flag = agree(kv_flag, value, ("--kv-heads", join(p, attr or "kv_heads")))
    if heads is None:
        fail("--heads is required: a state_dict does not say how many heads it has")
    family = detect_family(ck, p, args.family)
    if family != "proj" and kv_flag is None:
        kv_flag = heads  # GQA is read from k_proj's rows only: the other families have none
    parts = (family_per_head(ck, p, heads, kv_flag) if family == "per_head"
             else FAMILIES[family][1](ck, p, heads))
    d, d_k, kv_heads, kdim, vdim = layer_dims(parts, heads, kv_flag)
    if isinstance(module, torch.nn.MultiheadAttention):
        for attr, value in (("kdim", kdim), ("vdim", vdim)):
            if getattr(module, attr) != value:
                fail(f"{join(p, attr)} = {getattr(module, attr)} disagrees with the K/V weights' "
                     f"{value} columns")

    position = args.position
    xpos_module = getattr(module, "xpos", None) if module is not None else None
    if module is not None and hasattr(module, "xpos"):  # torchscale: xpos is None or an XPOS
        position = agree(position, "xpos" if xpos_module is not None else None,
                         ("--position", f"{join(p, 'xpos')} (an XPOS module)"))
        if position == "xpos" and xpos_module is None:
            fail(f"--position xpos disagrees with {join(p, 'xpos')} = None")
    position = position or "none"
    scale_base = args.xpos_scale_base
    if xpos_module is not None and hasattr(xpos_module, "scale_base"):
        scale_base = agree(scale_base, float(xpos_module.scale_base),
                           ("--xpos-scale-base", join(p, "xpos.scale_base")))
    rope_dims = 0
    if position == "rope":
        rope_dims = args.rope_dims or d_k
        if rope_dims % 2 or rope_dims > d_k:
            fail(f"--rope-dims {rope_dims} must be even and at most d_k {d_k}")
    elif position == "xpos":
        rope_dims = d_k
        if d_k % 2:
            fail(f"--position xpos needs an even d_k, d_model {d} / heads {heads} = {d_k}")
        if args.sliding_window:
            fail("--position xpos has no --sliding-window (torchscale's xPos centres every position)")

    norm, norm_prefix = default_norm(ck, args, family, p)
    norm_kind, norm_eps, norm_affine, nw, nb = "layer_norm", 1e-5, True, None, None
    if norm != "none":
        norm_kind, norm_eps, norm_affine, nw, nb = read_norm(ck, args, d, norm, norm_prefix)

    allowed = ("inv_freq", ".xpos.scale", "num_batches_tracked")
    unused = [n for n in ck.under(p) + (ck.under(norm_prefix) if norm_prefix else [])
              if n not in ck.used and not n.endswith(allowed)]
    if unused:
        fail(f"{unused[0]} (shape {shape_str(ck.tensors[unused[0]].shape)}) is under the prefix but "
             f"not used by this export ({len(unused)} unused: {', '.join(unused[:8])}); a norm "
             "needs --norm/--norm-prefix, anything else is not supported")

    bias = {r: (r + "b") in parts for r in "qkvo"}
    same = kdim == d and vdim == d
    tensors = {}
    if same:
        tensors["in_proj_weight"] = torch.cat([parts[r][1] for r in "qkv"])
    else:
        for r in "qkv":
            tensors[f"{r}_proj_weight"] = parts[r][1]
    if any(bias[r] for r in "qkv"):
        tensors["in_proj_bias"] = torch.cat([parts[r + "b"][1] for r in "qkv" if bias[r]])
    tensors["out_proj_weight"] = parts["o"][1]
    if bias["o"]:
        tensors["out_proj_bias"] = parts["ob"][1]
    if nw is not None:
        tensors["norm_weight"] = nw[1]
    if nb is not None:
        tensors["norm_bias"] = nb[1]

    max_seq_q = args.max_seq_q or max(64, args.reference_rows)
    cfg = dict(family=family, d_model=d, heads=heads, kv_heads=kv_heads, d_k=d_k, kdim=kdim,
               vdim=vdim, bias=bias, max_seq_q=max_seq_q,
               max_seq_kv=args.max_seq_kv or max_seq_q, max_batch=args.max_batch,
               max_threads=args.max_threads, prepack=not args.no_prepack,
               attention_weights=not args.no_attention_weights, position=position,
               rope_pairing=args.rope_pairing, rope_dims=rope_dims, rope_base=args.rope_base,
               xpos_scale_base=scale_base if scale_base is not None else 512.0,
               sliding_window=args.sliding_window, norm=norm, norm_kind=norm_kind,
               norm_eps=norm_eps, norm_affine=norm_affine if norm != "none" else True)
    for key in ("max_seq_q", "max_seq_kv", "max_batch", "max_threads"):
        if cfg[key] <= 0:
            fail(f"--{key.replace('_', '-')} {cfg[key]} must be positive")
    if args.reference_rows > cfg["max_seq_q"] or args.reference_rows > cfg["max_seq_kv"]:
        fail(f"--reference-rows {args.reference_rows} exceeds --max-seq-q {cfg['max_seq_q']} or "
             f"--max-seq-kv {cfg['max_seq_kv']}")
    if position == "rope" and cfg["rope_base"] <= 0:
        fail(f"--rope-base {cfg['rope_base']} must be positive")
    if position == "xpos" and cfg["xpos_scale_base"] <= 0:
        fail(f"--xpos-scale-base {cfg['xpos_scale_base']} must be positive")
    return cfg, tensors


# --------------------------------------------------------------------------------------------------
# The reference: emha's forward in float64 (self-attention, batch 1)

def get_slopes(n):  # the ALiBi reference's (ofirpress/attention_with_linear_biases)
    def power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        return [start * start ** i for i in range(n)]
    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + get_slopes(2 * closest)[0::2][:n - closest]


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rotate_every_two(x):
    return torch.stack((-x[..., 1::2], x[..., ::2]), dim=-1).flatten(-2)


def rope(x, cfg):
    """HF Llama's rotary embedding on the first rope_dims of each head; x [heads, n, d_k]."""
    n, d_rot = x.shape[1], cfg["rope_dims"]
    inv_freq = 1.0 / (cfg["rope_base"] ** (torch.arange(0, d_rot, 2, dtype=torch.float64) / d_rot))
    freqs = torch.arange(n, dtype=torch.float64)[:, None] * inv_freq[None]
    half = cfg["rope_pairing"] == "half"
    emb = torch.cat((freqs, freqs), -1) if half else freqs.repeat_interleave(2, -1)
    rot = x[..., :d_rot]
    rot = rot * emb.cos() + (rotate_half(rot) if half else rotate_every_two(rot)) * emb.sin()
    return torch.cat((rot, x[..., d_rot:]), -1)


def xpos(x, scale_base, downscale):
    """torchscale's XPOS.forward(x, offset=0, downscale); x [heads, n, d_k]."""
    n, d_k = x.shape[1], x.shape[2]
    scale_buf = (torch.arange(0, d_k, 2, dtype=torch.float64) + 0.4 * d_k) / (1.4 * d_k)
    min_pos = -n // 2
    scale = scale_buf ** (torch.arange(min_pos, min_pos + n, dtype=torch.float64) / scale_base)[:, None]
    half = d_k // 2
    inv_freq = 1.0 / (10000 ** (torch.arange(half, dtype=torch.float64) / half))
    angle = torch.arange(n, dtype=torch.float64)[:, None] * inv_freq[None]
    if downscale:
        scale = 1 / scale
    sin = (angle.sin() * scale).repeat_interleave(2, -1)
    cos = (angle.cos() * scale).repeat_interleave(2, -1)
    return x * cos + rotate_every_two(x) * sin


def normalize(x, cfg, w, b):
    if cfg["norm_kind"] == "layer_norm":
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        y = (x - mean) / torch.sqrt(var + cfg["norm_eps"])
    else:
        y = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + cfg["norm_eps"])
    if w is not None:
        y = y * w
    return y + b if b is not None else y


def reference_forward(cfg, tensors, x, causal):
    """x [n, d_model] float64 -> the layer's output [n, d_model] float64."""
    t = {k: v.double() for k, v in tensors.items()}
    d, h, kvh, d_k = cfg["d_model"], cfg["heads"], cfg["kv_heads"], cfg["d_k"]
    kv_dim, n = kvh * d_k, x.shape[0]
    nw, nb = t.get("norm_weight"), t.get("norm_bias")
    inp = normalize(x, cfg, nw, nb) if cfg["norm"] == "pre" else x
    w = t["in_proj_weight"]
    widths = [d, kv_dim, kv_dim]
    starts = [0, d, d + kv_dim]
    bias_all = t.get("in_proj_bias")
    proj, bias_at = [], 0
    for i, r in enumerate("qkv"):
        y = inp @ w[starts[i]:starts[i] + widths[i]].T
        if cfg["bias"][r]:
            y = y + bias_all[bias_at:bias_at + widths[i]]
            bias_at += widths[i]
        proj.append(y)
    q = proj[0].view(n, h, d_k).transpose(0, 1)
    k = proj[1].view(n, kvh, d_k).transpose(0, 1)
    v = proj[2].view(n, kvh, d_k).transpose(0, 1)
    if cfg["position"] == "rope":
        q, k = rope(q, cfg), rope(k, cfg)
    elif cfg["position"] == "xpos":
        q, k = xpos(q, cfg["xpos_scale_base"], False), xpos(k, cfg["xpos_scale_base"], True)
    k, v = k.repeat_interleave(h // kvh, 0), v.repeat_interleave(h // kvh, 0)
    scores = (q @ k.transpose(1, 2)) * d_k ** -0.5  # [h, n, n]
    pos = torch.arange(n)
    behind = pos[:, None] - pos[None, :]  # query i minus key j
    if cfg["position"] == "alibi":
        slopes = torch.tensor(get_slopes(h), dtype=torch.float64)
        scores = scores - slopes[:, None, None] * behind.abs().double()[None]
    blocked = torch.zeros(n, n, dtype=torch.bool)
    if causal:
        blocked |= behind < 0
    if cfg["sliding_window"]:
        blocked |= behind >= cfg["sliding_window"]
    scores = scores.masked_fill(blocked[None], float("-inf"))
    ctx = (torch.softmax(scores, -1) @ v).transpose(0, 1).reshape(n, d)
    if cfg["norm"] == "sub":
        ctx = normalize(ctx, cfg, nw, nb)
    out = ctx @ t["out_proj_weight"].T
    if "out_proj_bias" in t:
        out = out + t["out_proj_bias"]
    if cfg["norm"] == "pre":
        out = x + out
    elif cfg["norm"] == "post":
        out = normalize(x + out, cfg, nw, nb)
    return out


def make_reference(cfg, tensors, rows, causal, seed):
    """(input, output) float32 [rows, d_model]: input uniform(-1, 1) from `seed`."""
    g = torch.Generator().manual_seed(seed)
    x = (torch.rand(rows, cfg["d_model"], generator=g, dtype=torch.float64) * 2 - 1).float()
    out = reference_forward(cfg, tensors, x.double(), causal).float()
    if not bool(torch.isfinite(out).all()):
        fail("the reference output is not finite")
    return x, out


# --------------------------------------------------------------------------------------------------
# The blob (lib/include/emha/io/weight_blob.hpp)

def align(n, a=64):
    return (n + a - 1) // a * a


def blob_bytes(cfg, tensors, ref_rows, ref_causal):
    entries = sorted((BLOB_ID[k], t.detach().numpy().astype("<f4")) for k, t in tensors.items())
    table = bytearray()
    body = bytearray()
    offset = align(128 + 16 * len(entries))
    for tid, arr in entries:
        rows, cols = (arr.shape[0], 1) if arr.ndim == 1 else arr.shape
        table += struct.pack("<4I", tid, rows, cols, offset)
        data = arr.tobytes()
        body += data + bytes(align(len(data)) - len(data))
        offset += align(len(data))
    position = cfg["position"]
    normed = cfg["norm"] != "none"
    bias_bits = sum(1 << i for i, r in enumerate("qkvo") if cfg["bias"][r])
    head = struct.pack(
        "<4s25I", b"EMHA", 1, offset, 0, 128, 1, 0, cfg["d_model"], cfg["heads"], cfg["kv_heads"],
        cfg["kdim"], cfg["vdim"], bias_bits, POSITION[position],
        PAIRING[cfg["rope_pairing"]] if position == "rope" else 0, cfg["rope_dims"], 0, 0,
        cfg["sliding_window"], NORM[cfg["norm"]], NORM_KIND[cfg["norm_kind"]] if normed else 0, 0,
        int(cfg["norm_affine"]) if normed else 0, len(entries), ref_rows, int(ref_causal))
    head = bytearray(head)
    if position == "rope":
        struct.pack_into("<f", head, 64, cfg["rope_base"])
    if position == "xpos":
        struct.pack_into("<f", head, 68, cfg["xpos_scale_base"])
    if normed:
        struct.pack_into("<f", head, 84, cfg["norm_eps"])
    blob = head + bytes(128 - len(head)) + table
    blob += bytes(align(len(blob)) - len(blob)) + body
    assert len(blob) == offset
    struct.pack_into("<I", blob, 12, zlib.crc32(bytes(blob[16:])) & 0xFFFFFFFF)
    return bytes(blob)


# --------------------------------------------------------------------------------------------------
# The header

def hex_float(v):
    """The float32 value v as an exact C++ hex-float literal (checked to parse back bit-exact)."""
    f = np.float32(v)
    mantissa, exponent = float(f).hex().split("p")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    text = f"{mantissa}p{exponent}f"
    back = np.float32(float.fromhex(text[:-1]))
    assert back.view(np.uint32) == f.view(np.uint32), (v, text)
    return text


def cpp_bool(v):
    return "true" if v else "false"


def array_lines(name, arr, section, size_expr, what):
    values = [hex_float(v) + "," for v in arr.detach().numpy().astype(np.float32).reshape(-1)]
    attr = f'[[gnu::section("{section}")]] ' if section else ""
    lines = [f"// {what}",
             f"{attr}alignas(64) inline constexpr float {name}[{len(values)}] = {{"]
    row = "   "
    for v in values:
        if len(row) + 1 + len(v) > 100:
            lines.append(row)
            row = "   "
        row += " " + v
    lines += [row, "};",
              f"static_assert(sizeof({name}) / sizeof(float) == {size_expr},",
              f'              "{name} must hold {size_expr.replace("Config::", "")} floats");', ""]
    return lines


def header_text(cfg, tensors, name, section, ref, source):
    c = cfg
    pb = c["bias"]
    lines = [
        f"// Generated by emha_export.py from {source} (torch {torch.__version__}). Do not edit.",
        f"// Family {c['family']}; layout 0: PyTorch row-major [out_features, in_features].",
        "#pragma once", "#include <cstddef>", "", '#include "emha/emha.hpp"', "",
        f"namespace {name} {{", "",
        f"struct Config : emha::MhaConfig<{c['d_model']}, {c['heads']}, {c['max_seq_q']}, "
        f"{c['max_seq_kv']}> {{",
        f"  static constexpr std::size_t kv_heads = {c['kv_heads']};",
        f"  static constexpr std::size_t kdim = {c['kdim']};",
        f"  static constexpr std::size_t vdim = {c['vdim']};",
        f"  static constexpr std::size_t max_batch = {c['max_batch']};",
        f"  static constexpr bool bias = {cpp_bool(any(pb.values()))};",
        f"  static constexpr bool prepack_weights = {cpp_bool(c['prepack'])};",
        f"  static constexpr bool attention_weights = {cpp_bool(c['attention_weights'])};",
        f"  static constexpr std::size_t max_threads = {c['max_threads']};",
        f"  static constexpr emha::ProjectionBias projection_bias{{{cpp_bool(pb['q'])}, "
        f"{cpp_bool(pb['k'])}, {cpp_bool(pb['v'])}, {cpp_bool(pb['o'])}}};",
        f"  static constexpr emha::Position position = emha::Position::{c['position']};",
        f"  static constexpr emha::RopePairing rope_pairing = emha::RopePairing::{c['rope_pairing']};",
        f"  static constexpr std::size_t rope_dims = {c['rope_dims'] if c['position'] == 'rope' else 0};",
        f"  static constexpr float rope_base = {hex_float(c['rope_base'])};",
        f"  static constexpr float xpos_scale_base = {hex_float(c['xpos_scale_base'])};",
        f"  static constexpr std::size_t sliding_window = {c['sliding_window']};",
        f"  static constexpr emha::NormPlacement norm = emha::NormPlacement::{c['norm']};",
        f"  static constexpr emha::NormKind norm_kind = emha::NormKind::{c['norm_kind']};",
        f"  static constexpr float norm_eps = {hex_float(c['norm_eps'])};",
        f"  static constexpr bool norm_affine = {cpp_bool(c['norm_affine'])};",
        "};",
        "static_assert(emha::detail::check_config<Config>());", "",
        "// Widths: d_k = d_model / heads, kv_dim = kv_heads * d_k.",
        "inline constexpr std::size_t d_k = Config::d_model / Config::heads;",
        "inline constexpr std::size_t kv_dim = Config::kv_heads * d_k;", "",
    ]
    bias_q = "(Config::bias && Config::projection_bias.q ? Config::d_model : 0)"
    bias_kv = " + ".join(f"(Config::bias && Config::projection_bias.{r} ? kv_dim : 0)" for r in "kv")
    sizes = {
        "in_proj_weight": ("(Config::d_model + 2 * kv_dim) * Config::d_model",
                           "rows W_q | W_k | W_v, [d_model + 2 * kv_dim, d_model]"),
        "q_proj_weight": ("Config::d_model * Config::d_model", "[d_model, d_model]"),
        "k_proj_weight": ("kv_dim * Config::kdim", "[kv_dim, kdim]"),
        "v_proj_weight": ("kv_dim * Config::vdim", "[kv_dim, vdim]"),
        "in_proj_bias": (f"{bias_q} + {bias_kv}", "the biases of Q [d_model], K, V [kv_dim] "
                         "that have one, in that order"),
        "out_proj_weight": ("Config::d_model * Config::d_model", "[d_model, d_model]"),
        "out_proj_bias": ("Config::d_model", "[d_model]"),
        "norm_weight": ("Config::d_model", f"[d_model]: the {c['norm_kind']}'s weight"),
        "norm_bias": ("Config::d_model", "[d_model]: the layer_norm's bias"),
    }
    for key in BLOB_ID:
        if key in tensors:
            lines += array_lines(key, tensors[key], section, *sizes[key])
    if ref is not None:
        x, out, causal = ref
        rows = x.shape[0]
        lines += ["// The exporter's reference (self-attention, batch 1): ref_input [ref_rows, d_model]",
                  "// in, ref_output [ref_rows, d_model] out, computed in float64 with emha's semantics.",
                  f"inline constexpr std::size_t ref_rows = {rows};",
                  f"inline constexpr bool ref_causal = {cpp_bool(causal)};", ""]
        lines += array_lines("ref_input", x, section, "ref_rows * Config::d_model", "[ref_rows, d_model]")
        lines += array_lines("ref_output", out, section, "ref_rows * Config::d_model", "[ref_rows, d_model]")
    lines += ["// The weights as emha reads them: pass to MultiHeadAttention<Config>::set_weights().",
              "inline emha::MhaWeights weights() noexcept {", "  emha::MhaWeights w;"]
    lines += [f"  w.{k} = {k};" for k in BLOB_ID if k in tensors and not k.startswith("ref_")]
    lines += ["  return w;", "}", "", f"}}  // namespace {name}", ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------

def parse_args(argv):
    a = argparse.ArgumentParser(prog="emha_export.py", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("checkpoint")
    a.add_argument("--prefix", default="", help="the attention module's name in the state_dict")
    a.add_argument("--heads", type=int)
    a.add_argument("--kv-heads", type=int)
    a.add_argument("--family", default="auto", choices=["auto"] + list(FAMILIES))
    a.add_argument("--position", choices=list(POSITION))
    a.add_argument("--rope-pairing", default="half", choices=list(PAIRING))
    a.add_argument("--rope-dims", type=int, default=0, help="rotated dims per head (0: all d_k)")
    a.add_argument("--rope-base", type=float, default=10000.0)
    a.add_argument("--xpos-scale-base", type=float)
    a.add_argument("--sliding-window", type=int, default=0)
    a.add_argument("--norm", choices=list(NORM))
    a.add_argument("--norm-kind", choices=list(NORM_KIND))
    a.add_argument("--norm-prefix")
    a.add_argument("--norm-eps", type=float)
    a.add_argument("--max-seq-q", type=int, default=0, help="default max(64, --reference-rows)")
    a.add_argument("--max-seq-kv", type=int, default=0, help="default --max-seq-q")
    a.add_argument("--max-batch", type=int, default=1)
    a.add_argument("--max-threads", type=int, default=1)
    a.add_argument("--no-prepack", action="store_true", help="prepack_weights = false (MCU, flash)")
    a.add_argument("--no-attention-weights", action="store_true")
    a.add_argument("--name", help="the header's namespace (default: the output file's stem)")
    a.add_argument("--section", help="[[gnu::section(SECTION)]] on the header's arrays")
    a.add_argument("--header")
    a.add_argument("--blob")
    a.add_argument("--reference-rows", type=int, default=0)
    a.add_argument("--reference-causal", action="store_true")
    a.add_argument("--seed", type=int, default=0, help="the reference input's seed")
    args = a.parse_args(argv)
    if not args.header and not args.blob:
        a.error("nothing to write: give --header and/or --blob")
    if args.sliding_window < 0 or args.reference_rows < 0:
        a.error("--sliding-window and --reference-rows must not be negative")
    return args


def namespace_name(args):
    name = args.name or pathlib.Path(args.header or args.blob).stem
    if not args.name:
        name = re.sub(r"\W", "_", name)
        name = "_" + name if name[0].isdigit() else name
    if not re.fullmatch(r"[A-Za-z_]\w*(::[A-Za-z_]\w*)*", name):
        fail(f"--name {name!r} is not a C++ namespace name")
    return name


def main(argv):
    args = parse_args(argv)
    ck = Checkpoint(args.checkpoint)
    cfg, tensors = build_layer(ck, args)
    name = namespace_name(args)
    ref = None
    if args.reference_rows:
        if cfg["kdim"] != cfg["d_model"] or cfg["vdim"] != cfg["d_model"]:
            fail(f"--reference-rows is self-attention: kdim {cfg['kdim']} and vdim {cfg['vdim']} "
                 f"must equal d_model {cfg['d_model']}")
        x, out = make_reference(cfg, tensors, args.reference_rows, args.reference_causal, args.seed)
        ref = (x, out, args.reference_causal)
    if args.blob:
        blob_tensors = dict(tensors, **({"ref_input": ref[0], "ref_output": ref[1]} if ref else {}))
        pathlib.Path(args.blob).write_bytes(
            blob_bytes(cfg, blob_tensors, args.reference_rows, args.reference_causal))
    if args.header:
        source = pathlib.Path(args.checkpoint).name + (f" ({args.prefix})" if args.prefix else "")
        pathlib.Path(args.header).write_text(
            header_text(cfg, tensors, name, args.section, ref, source))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except ExportError as e:
        print(f"emha-export: {e}", file=sys.stderr)
        sys.exit(1)

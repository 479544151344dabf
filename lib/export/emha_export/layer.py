# SPDX-License-Identifier: Apache-2.0
"""The layer: its dims from the tensors, its norm, and build_layer, everything the Config and the
blob say, each checked."""
import copy
from typing import NamedTuple

import torch

from . import features as feat
from . import rope_scaling as rs
from .checkpoint import HEADS_ATTRS, KV_HEADS_ATTRS, int_attr
from .errors import agree, fail, join, shape_str
from .families import (FAMILIES, IGNORED, IGNORED_SUFFIXES, detect_family, family_bigcode,
                       family_falcon, family_per_head)
from .hf import HfConfig, layer_prefix, parse_layer
from .int8 import projection_scales

# --------------------------------------------------------------------------------------------------
# Shapes: the layer's dims from its tensors, each checked

def expect(entry, shape, why):
    name, t = entry
    if tuple(t.shape) != tuple(shape):
        fail(f"{name} has shape {shape_str(t.shape)}, expected {shape_str(shape)} ({why})")


def layer_dims(parts, heads, kv_flag, head_dim=None):
    """d_model, d_k (head_dim), kv_heads, kdim, vdim from the Q/K/V/O tensors, every shape
    checked. head_dim: config.json's (decoupled from d_model / heads), else Q's rows / heads."""
    for role in ("q", "k", "v", "o"):
        name, t = parts[role]
        if t.dim() != 2:
            fail(f"{name} has shape {shape_str(t.shape)}, expected a matrix [out, in]")
    d = parts["q"][1].shape[1]
    rows = parts["q"][1].shape[0]
    if heads <= 0 or rows % heads:
        fail(f"--heads {heads} does not divide the {rows} rows of {parts['q'][0]} (heads x "
             f"head_dim; d_model {d}: it has shape {shape_str(parts['q'][1].shape)})")
    d_k = head_dim or rows // heads
    expect(parts["q"], (heads * d_k, d), f"heads {heads} x head_dim {d_k} rows, d_model {d} "
           "columns: a Linear's [out_features, in_features]")
    kname, k = parts["k"]
    rows, kdim = k.shape
    if kv_flag is not None:
        kv_heads = kv_flag
        expect(parts["k"], (kv_heads * d_k, kdim),
               f"kv_heads {kv_heads} x d_k {d_k} rows, kdim {kdim} columns")
    else:
        if rows % d_k:
            fail(f"{kname} has shape {shape_str(k.shape)}: {rows} rows are not a multiple of d_k "
                 f"{d_k} (Q's rows / heads {heads})")
        kv_heads = rows // d_k
    if kv_heads <= 0 or heads % kv_heads:
        fail(f"{kname} has shape {shape_str(k.shape)}: kv_heads {kv_heads} ({rows} rows / d_k "
             f"{d_k}) does not divide heads {heads}")
    vdim = parts["v"][1].shape[1]
    expect(parts["v"], (kv_heads * d_k, vdim),
           f"kv_heads {kv_heads} x d_k {d_k} rows, as {kname}, vdim {vdim} columns")
    expect(parts["o"], (d, heads * d_k), f"d_model {d} rows, heads x head_dim {heads * d_k} columns")
    for role, width in (("qb", heads * d_k), ("kb", kv_heads * d_k), ("vb", kv_heads * d_k),
                        ("ob", d)):
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
    own = {"linear": ("post", "layer_norm"), "proj": ("sub", "inner_attn_ln"),
           "bert": ("post", "output.LayerNorm")}.get(family)
    if family == "t5" and p.endswith(".SelfAttention"):  # T5LayerSelfAttention: x + attn(norm(x))
        parent = p[:-len(".SelfAttention")]
        if ck.has(join(parent, "layer_norm.weight")):
            own = ("pre", "layer_norm")
            p = parent
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


def read_norm(ck, args, d, norm, prefix, eps):
    """(kind, eps, affine, weight entry, bias entry) of the norm at `prefix`; d: its width
    (d_model; heads x head_dim for sub-LN)."""
    kind = args.norm_kind
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
            expect(e, (d,), f"its width {d}")
    return kind, eps, w is not None, entries[0] if w is not None else None, \
        entries[1] if b is not None else None


# --------------------------------------------------------------------------------------------------
# The layer: everything the Config and the blob say

class Layer(NamedTuple):
    """What an export writes: the Config's values (cfg) and the tensors under emha's names."""
    cfg: dict
    tensors: dict


def locate(ck, args):
    """(prefix, HfConfig, the module there or None); --layer N resolved to its prefix."""
    layer = None
    if args.layer is not None:
        if args.prefix:
            fail(f"--layer {args.layer} and --prefix {args.prefix}: give one of them")
        args.prefix = layer_prefix(list(ck.tensors), args.layer)
        layer = parse_layer(args.layer)[1]
    p = args.prefix
    hf = HfConfig(ck.config, ck.config_path, p, layer)
    hf.refuse_unsupported(args.family)
    return p, hf, ck.submodule(p)


def read_heads(args, p, hf, module):
    """(heads, kv_heads flag or None): the flags, config.json and the module's attributes, agreeing."""
    where = hf.where
    key, value = hf.heads()
    heads = agree(args.heads, value, ("--heads", f"{where} {key}"))
    key, value = hf.kv_heads()
    kv_flag = agree(args.kv_heads, value, ("--kv-heads", f"{where} {key}"))
    if module is not None:
        attr, value = int_attr(module, HEADS_ATTRS)
        heads = agree(heads, value, ("--heads", join(p, attr or "num_heads")))
        attr, value = int_attr(module, KV_HEADS_ATTRS)
        kv_flag = agree(kv_flag, value, ("--kv-heads", join(p, attr or "kv_heads")))
    if heads is None:
        fail("--heads is required: a state_dict does not say how many heads it has")
    return heads, kv_flag


def read_projections(ck, p, family, heads, kv_flag, layout=None):
    """(parts, the checkpoint's int8 scales per projection or None): the family's tensors, read
    once as values and, when some are int8 (int8.py), once more as their scales. layout:
    Falcon's (config.json's)."""
    def read_family():
        if family == "per_head":
            return family_per_head(ck, p, heads, kv_flag)
        if family in ("falcon", "bigcode"):
            if layout is None:
                fail(f"--family {family} needs config.json (its multi_query, and Falcon's "
                     "new_decoder_architecture and num_kv_heads, lay out the fused projection)")
            read = family_falcon if family == "falcon" else family_bigcode
            return read(ck, p, heads, kv_flag, layout)
        return FAMILIES[family][1](ck, p, heads)

    ck.int8_pass = True
    try:
        parts = read_family()
        if not ck.int8_read:
            return parts, None
        ck.view = "scales"
        scale_parts = read_family()
    finally:
        ck.view, ck.int8_pass = "values", False
    return parts, projection_scales(parts, scale_parts)


def resolve_rope_and_window(args, hf, family, d_k):
    """Completes args' position, RoPE and sliding-window flags from config.json's model type (or
    the family's own RoPE), each agreeing with a flag given."""
    where = hf.where
    if hf.present and family != "t5":
        implied = hf.position(family)
        args.position = agree(args.position, implied, ("--position", f"{where} model_type "
                                                       f"{hf.model_type} ({implied})"))
        if implied == "rope":
            pairing, how = hf.rope_pairing()
            args.rope_pairing = agree(args.rope_pairing, pairing,
                                      ("--rope-pairing", f"{where} model_type {hf.model_type} "
                                       f"({how})"))
            key, base = hf.rope_base()
            if base is None and args.rope_base is None:
                args.assumed.append(f"rope base 10000 ({where} has no rope_theta: its config "
                                    "class's default; --rope-base sets it)")
            args.rope_base = agree(args.rope_base, float(base) if base is not None else 10000.0,
                                   ("--rope-base", f"{where} {key or 'rope_theta (default)'}"))
            key, dims = hf.rotary_dims(d_k)
            if dims is not None:
                args.rope_dims = agree(args.rope_dims or None, dims if dims != d_k else None,
                                       ("--rope-dims", f"{where} {key}"))
            key, frac = hf.rotary_fraction()
            if frac is not None:
                dims = int(d_k * float(frac))
                if dims % 2:
                    fail(f"{where} {key} = {frac}: {dims} rotated dims of d_k {d_k} are odd")
                args.rope_dims = agree(args.rope_dims or None, dims if dims != d_k else None,
                                       ("--rope-dims", f"{where} {key} {frac} x d_k {d_k}"))
        key, window = hf.sliding_window()
        args.sliding_window = agree(args.sliding_window, window,
                                    ("--sliding-window", f"{where} {key or 'sliding_window'}"))
    elif family in ("neox", "phi3") and args.position is None:
        args.position = "rope"
    if args.position == "rope" and args.rope_pairing is None:
        args.assumed.append("rope pairing half (rotate_half; --rope-pairing sets it)")
    if args.position == "rope" and args.rope_base is None:
        args.assumed.append("rope base 10000 (--rope-base sets it)")
    if args.rope_pairing is None:
        args.rope_pairing = "half"
    if args.rope_base is None:
        args.rope_base = 10000.0
    if args.sliding_window is None:
        args.sliding_window = 0


def resolve_position(ck, args, p, module, d, heads, d_k):
    """(position, rope_dims, xPos scale base or None): the flags against torchscale's xpos module,
    or in a state_dict its buffer xpos.scale (which is xPos, and the scale base is then asked for
    or assumed aloud: the buffer does not hold it)."""
    position = args.position
    xpos_module = getattr(module, "xpos", None) if module is not None else None
    if module is not None and hasattr(module, "xpos"):  # torchscale: xpos is None or an XPOS
        position = agree(position, "xpos" if xpos_module is not None else None,
                         ("--position", f"{join(p, 'xpos')} (an XPOS module)"))
        if position == "xpos" and xpos_module is None:
            fail(f"--position xpos disagrees with {join(p, 'xpos')} = None")
    buffer = join(p, "xpos.scale")
    if module is None and ck.has(buffer):
        position = agree(position, "xpos", ("--position", f"{buffer} (torchscale's xPos buffer)"))
        # torchscale's XPOS(head_dim): (arange(0, head_dim, 2) + 0.4 head_dim) / (1.4 head_dim)
        want = (torch.arange(0, d_k, 2, dtype=torch.float32) + 0.4 * d_k) / (1.4 * d_k)
        got = ck.tensors[buffer].detach().to(torch.float32).reshape(-1)
        if got.shape != want.shape or not torch.allclose(got, want, rtol=1e-6, atol=0):
            fail(f"{buffer} ({shape_str(ck.tensors[buffer].shape)}) is not torchscale's xPos scale "
                 f"for head_dim {d_k}")
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
    return position, rope_dims, scale_base


def bloom_block_norm(args, hf, p):
    """BLOOM's attention adds the block's input to its output (BloomAttention's residual): the
    attention half of the block, x + attention(input_layernorm(x)), is emha's pre-LN layer with
    the block's input_layernorm (a LayerNorm, eps layer_norm_epsilon)."""
    where, ln = hf.where, join(p.rpartition(".")[0], "input_layernorm")
    what = f"{where} model_type bloom (x + attention(input_layernorm(x)))"
    args.norm = agree(args.norm, "pre", ("--norm", what))
    args.norm_prefix = agree(args.norm_prefix, ln, ("--norm-prefix", what))
    args.norm_kind = agree(args.norm_kind, "layer_norm", ("--norm-kind", what))
    key, eps = hf.take("layer_norm_epsilon")
    if eps is None and args.norm_eps is None:
        eps = 1e-5
        args.assumed.append(f"norm eps 1e-5 ({where} has no layer_norm_epsilon: BloomConfig's "
                            "default; --norm-eps sets it)")
    args.norm_eps = agree(args.norm_eps, eps, ("--norm-eps", f"{where} {key}"))


def resolve_norm_eps(args, hf, family, p):
    """--norm-eps, or BERT's and T5's from config.json (agreeing with the flag), or None."""
    norm_eps = args.norm_eps
    if family in ("bert", "t5"):
        key, value = hf.norm_eps()
        norm_eps = agree(norm_eps, value, ("--norm-eps", f"{hf.where} {key}"))
        if norm_eps is None and family == "bert":
            fail(f"{join(p, 'output.LayerNorm')}: --norm-eps is required without config.json "
                 "(BERT's layer_norm_eps, 1e-12 in its configs)")
        if norm_eps is None and hf.present:
            norm_eps = 1e-6
            args.assumed.append(f"norm eps 1e-6 ({hf.where} has no layer_norm_epsilon: T5Config's "
                                "default; --norm-eps sets it)")
    return norm_eps


def resolve_norm(ck, args, family, p, width, norm_eps):
    """(placement, prefix, kind, eps, affine, weight entry, bias entry): the layer's norm from the
    flags, the module and the family; width(placement): d_model, or heads x d_k for sub-LN."""
    norm, norm_prefix = default_norm(ck, args, family, p)
    if norm == "none":
        return norm, norm_prefix, "layer_norm", 1e-5, True, None, None
    kind, eps, affine, nw, nb = read_norm(ck, args, width(norm), norm, norm_prefix, norm_eps)
    return norm, norm_prefix, kind, eps, affine, nw, nb


def refuse_unused(ck, p, norm_prefix, family):
    """Every tensor under the prefix (and the norm's) was read or is a known buffer: nothing is
    silently left out."""
    ignored = {join(p, n) for n in IGNORED.get(family, ())}
    unused = [n for n in ck.under(p) + (ck.under(norm_prefix) if norm_prefix else [])
              if n not in ck.used and n not in ignored
              and not any(n == s or n.endswith("." + s) for s in IGNORED_SUFFIXES)]
    if unused:
        fail(f"{unused[0]} (shape {shape_str(ck.tensors[unused[0]].shape)}) is under the prefix but "
             f"not used by this export ({len(unused)} unused: {', '.join(unused[:8])}); a norm "
             "needs --norm/--norm-prefix, anything else is not supported")


def emha_tensors(parts, given_scales, same, extra):
    """(tensors, scales or None) under emha's names: Q, K and V stacked into in_proj_* where kdim
    and vdim are d_model (`same`), the output projection, and `extra` ({name: entry or None})."""
    bias = {r: (r + "b") in parts for r in "qkvo"}
    tensors = {}
    if same:
        tensors["in_proj_weight"] = torch.cat([parts[r][1] for r in "qkv"])
    else:
        for r in "qkv":
            tensors[f"{r}_proj_weight"] = parts[r][1]
    if any(bias[r] for r in "qkv"):
        tensors["in_proj_bias"] = torch.cat([parts[r + "b"][1] for r in "qkv" if bias[r]])
    tensors["out_proj_weight"] = parts["o"][1]
    scales = None
    if given_scales is not None:  # the checkpoint's int8 weights: their scales, rows as `tensors`
        scales = ({"in_proj_weight": torch.cat([given_scales[r] for r in "qkv"])} if same
                  else {f"{r}_proj_weight": given_scales[r] for r in "qkv"})
        scales["out_proj_weight"] = given_scales["o"]
    if bias["o"]:
        tensors["out_proj_bias"] = parts["ob"][1]
    for name, entry in extra.items():
        if entry is not None:
            tensors[name] = entry[1]
    return tensors, scales


def check_sizes(cfg, args):
    for key in ("max_seq_q", "max_seq_kv", "max_batch", "max_threads"):
        if cfg[key] <= 0:
            fail(f"--{key.replace('_', '-')} {cfg[key]} must be positive")
    if args.reference_rows > cfg["max_seq_q"] or args.reference_rows > cfg["max_seq_kv"]:
        fail(f"--reference-rows {args.reference_rows} exceeds --max-seq-q {cfg['max_seq_q']} or "
             f"--max-seq-kv {cfg['max_seq_kv']}")
    if cfg["position"] == "rope" and cfg["rope_base"] <= 0:
        fail(f"--rope-base {cfg['rope_base']} must be positive")
    if cfg["position"] == "xpos" and cfg["xpos_scale_base"] <= 0:
        fail(f"--xpos-scale-base {cfg['xpos_scale_base']} must be positive")


def build_layer(ck, args):
    """The Layer the checkpoint and the flags describe, every value checked. `args` is not
    changed: the flags are completed on a copy (from config.json, the module, the family)."""
    args = copy.copy(args)
    args.assumed = []  # values neither a flag, config.json nor the module gave: said aloud
    p, hf, module = locate(ck, args)
    where = hf.where
    heads, kv_flag = read_heads(args, p, hf, module)
    fused = hf.fused_layout(heads) if hf.present else None  # Falcon's, GPT-BigCode's
    family = agree(args.family if args.family != "auto" else None, fused[0],
                   ("--family", f"{where} model_type {hf.model_type}")) if fused else \
        detect_family(ck, p, args.family)
    if fused:
        kv_flag = agree(kv_flag, fused[2], ("--kv-heads", f"{where} {fused[3]}"))
    elif family not in ("proj", "phi3", "t5") and kv_flag is None:
        kv_flag = heads  # GQA is read from K's rows only: the other families have none
    parts, given_scales = read_projections(ck, p, family, heads, kv_flag,
                                           fused[1] if fused else None)
    _, hidden = hf.get("hidden_size", "n_embd", "dim", "d_model")
    head_dim = feat.head_dim_from(hf, args, heads, parts["q"])
    d, d_k, kv_heads, kdim, vdim = layer_dims(parts, heads, kv_flag, head_dim)
    if isinstance(hidden, int) and hidden != d:
        fail(f"{parts['q'][0]} has d_model {d} columns, but {where} says hidden size {hidden}")
    if isinstance(module, torch.nn.MultiheadAttention):
        for attr, value in (("kdim", kdim), ("vdim", vdim)):
            if getattr(module, attr) != value:
                fail(f"{join(p, attr)} = {getattr(module, attr)} disagrees with the K/V weights' "
                     f"{value} columns")

    qk_norm, qk_offset, qk_eps, qn, kn = feat.read_qk_norm(ck, p, hf, args, heads, kv_heads, d_k)
    relative = None
    if family == "t5":
        args.position = agree(args.position, "relative_bias",
                              ("--position", f"{family} (relative_attention_bias)"))
        relative = feat.read_relative_bias(ck, p, hf, args, heads)
    elif args.position == "relative_bias":
        fail("--position relative_bias is T5's (q/k/v/o with relative_attention_bias); "
             f"'{p}' is family {family}")
    resolve_rope_and_window(args, hf, family, d_k)
    if hf.present and hf.model_type == "bloom":
        bloom_block_norm(args, hf, p)
    norm_eps = resolve_norm_eps(args, hf, family, p)
    position, rope_dims, scale_base = resolve_position(ck, args, p, module, d, heads, d_k)
    if position == "xpos" and scale_base is None:
        args.assumed.append("xpos scale base 512 (torchscale's default; --xpos-scale-base sets it)")
    norm, norm_prefix, norm_kind, norm_eps, norm_affine, nw, nb = resolve_norm(
        ck, args, family, p, lambda placement: heads * d_k if placement == "sub" else d, norm_eps)
    scale, scale_from = feat.resolve_scale(hf, args, family, d_k, heads)
    head_split = feat.resolve_head_split(args, family, position, d, heads, d_k)
    refuse_unused(ck, p, norm_prefix, family)

    tensors, scales = emha_tensors(parts, given_scales, kdim == d and vdim == d, {
        "norm_weight": nw, "norm_bias": nb, "q_norm_weight": qn, "k_norm_weight": kn,
        "relative_attention_bias": relative[3] if relative else None})
    max_seq_q = args.max_seq_q or max(64, args.reference_rows)
    cfg = dict(family=family, d_model=d, heads=heads, kv_heads=kv_heads, d_k=d_k, kdim=kdim,
               vdim=vdim, bias={r: (r + "b") in parts for r in "qkvo"}, max_seq_q=max_seq_q,
               max_seq_kv=args.max_seq_kv or max_seq_q, max_batch=args.max_batch,
               max_threads=args.max_threads, prepack=not args.no_prepack,
               attention_weights=not args.no_attention_weights, position=position,
               rope_pairing=args.rope_pairing, rope_dims=rope_dims, rope_base=args.rope_base,
               xpos_scale_base=scale_base if scale_base is not None else 512.0,
               sliding_window=args.sliding_window, norm=norm, norm_kind=norm_kind,
               norm_eps=norm_eps, norm_affine=norm_affine,
               head_dim=d_k, scale=scale, scale_from=scale_from, qk_norm=qk_norm,
               qk_norm_eps=qk_eps, qk_norm_unit_offset=qk_offset, head_split=head_split,
               relative_buckets=relative[0] if relative else 32,
               relative_max_distance=relative[1] if relative else 128,
               relative_bidirectional=relative[2] if relative else True,
               relative_from=relative[3][0] if relative else None,
               outside_norms=hf.outside_norms() if hf.present else None,
               given_scales=scales, assumed=list(args.assumed))
    check_sizes(cfg, args)
    cfg["softcap_from"], cfg["softcap"] = hf.softcap() if hf.present else (None, 0.0)
    if cfg["softcap"] < 0:
        fail(f"{where} attn_logit_softcapping = {cfg['softcap']} must not be negative")
    cfg["rope_scaling"] = None
    if position == "rope" and hf.present:
        key, scaling = hf.rope_scaling()
        if scaling is not None:
            cfg["rope_scaling"] = rs.resolve(
                where, key, scaling, hf.take("max_position_embeddings")[1],
                hf.take("original_max_position_embeddings")[1], rope_dims,
                max(cfg["max_seq_q"], cfg["max_seq_kv"]), cfg["assumed"])
    cfg.update(prefix=p, from_config=hf.used, config_file=where if hf.present else None,
               causal=hf.causal(family))
    return Layer(cfg, tensors)

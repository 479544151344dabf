# SPDX-License-Identifier: Apache-2.0
"""Part of emha_export.py: reading one attention layer from a PyTorch checkpoint.

The checkpoint's tensors (Checkpoint), the naming families, the layer's dims and norm, each checked,
and build_layer: the layer's Config values and tensors under emha's names. Every inconsistency is an
ExportError (fail) naming the tensor and both shapes; emha_export.py prints it and exits with 1.
"""
from collections.abc import Mapping

import torch

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

    def __init__(self, path, allow_pickle=False, config_path=None):
        from emha_export_hf import load_checkpoint  # noqa: E402 (it imports fail from here)
        obj, self.config, self.config_path, self.file = load_checkpoint(path, allow_pickle,
                                                                       config_path)
        self.module = obj if isinstance(obj, torch.nn.Module) else None
        if self.module is not None:
            state = self.module.state_dict()
        elif isinstance(obj, dict) and isinstance(obj.get("state_dict"), dict):
            state = obj["state_dict"]
        elif isinstance(obj, (dict, Mapping)):
            state = obj
        else:
            fail(f"{path}: neither a state_dict nor a module (a {type(obj).__name__})")
        self.tensors = state if not isinstance(state, dict) else \
            {k: v for k, v in state.items() if isinstance(v, torch.Tensor)}
        self.used = set()
        self.view, self.int8_pass, self.int8_read = "values", False, set()

    def has(self, name):
        return name in self.tensors

    def under(self, prefix):
        return sorted(n for n in self.tensors if not prefix or n.startswith(prefix + "."))

    def found(self, prefix):
        names = self.under(prefix)
        shown = ", ".join(names[:24]) + (f", ... ({len(names)} in all)" if len(names) > 24 else "")
        return f"found under '{prefix}': {shown}" if names else f"nothing is under '{prefix}'"

    def get(self, name, prefix):
        """The tensor `name` as float32 (missing: an error listing what is under `prefix`). An
        int8 projection weight (emha_export_int8.py) is its values as float32 in the "values"
        view, its row scales broadcast over the columns in the "scales" view, where every float
        tensor is NaN; int8 is refused outside the projections (int8_pass False)."""
        if name not in self.tensors:
            fail(f"{name} is missing; {self.found(prefix)}")
        self.used.add(name)
        raw = self.tensors[name]
        if raw.dtype == torch.int8:
            from emha_export_int8 import checkpoint_int8  # noqa: E402 (it imports fail from here)
            if not self.int8_pass:
                fail(f"{name} is int8 {shape_str(raw.shape)}: only the projections' weights may "
                     "be int8 (biases, norms and tables stay float)")
            q, scale = checkpoint_int8(self.tensors, name)
            self.used.add(name + "_scale")
            self.int8_read.add(name)
            return q if self.view == "values" else scale[:, None].expand_as(q).contiguous()
        t = raw.detach().to(torch.float32).contiguous()
        bad = ~torch.isfinite(t)
        if bool(bad.any()):
            first = [int(i) for i in bad.nonzero()[0]]
            fail(f"{name} has shape {shape_str(t.shape)} and {int(bad.sum())} non-finite values "
                 f"(the first at {first}, {float(self.tensors[name].reshape(-1)[bad.reshape(-1)][0])})")
        return t if self.view == "values" else torch.full_like(t, float("nan"))

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


def family_bert(ck, p, heads):  # BERT, RoBERTa, ELECTRA: BertSelfAttention + BertSelfOutput
    return read_linear(ck, p, ["q", "k", "v", "o"],
                       ["self.query", "self.key", "self.value", "output.dense"])


def family_vit(ck, p, heads):  # ViTAttention: ViTSelfAttention + ViTSelfOutput (no norm)
    return read_linear(ck, p, ["q", "k", "v", "o"],
                       ["attention.query", "attention.key", "attention.value", "output.dense"])


def family_distilbert(ck, p, heads):
    return read_linear(ck, p, ["q", "k", "v", "o"], ["q_lin", "k_lin", "v_lin", "out_lin"])


def family_t5(ck, p, heads):
    """T5Attention: P.q, P.k, P.v [heads x d_kv, d_model], P.o [d_model, heads x d_kv], no bias."""
    return read_linear(ck, p, ["q", "k", "v", "o"], ["q", "k", "v", "o"])


def split_rows(parts, role_names, name, t, sizes, what):
    """parts[role] <- consecutive row blocks of t (a matrix or a bias vector) of `sizes` rows."""
    at = 0
    for role, size in zip(role_names, sizes):
        parts[role] = (f"{name} {what} {at}..{at + size - 1}", t[at:at + size].contiguous())
        at += size


def family_gpt2(ck, p, heads):
    """GPT-2's Conv1D: weight [in, out] (y = x W + b), c_attn's output columns q | k | v."""
    name = join(p, "c_attn.weight")
    w = ck.get(name, p)
    if w.dim() != 2 or w.shape[1] != 3 * w.shape[0]:
        fail(f"{name} has shape {shape_str(w.shape)}, expected [d_model, 3 x d_model] (a Conv1D's "
             "[in_features, out_features], columns q | k | v)")
    d = w.shape[0]
    parts = {}
    split_rows(parts, "qkv", name + " (Conv1D, transposed)", w.t(), [d] * 3, "columns")
    bname = join(p, "c_attn.bias")
    if ck.has(bname):
        b = ck.get(bname, p)
        if tuple(b.shape) != (3 * d,):
            fail(f"{bname} has shape {shape_str(b.shape)}, expected {shape_str((3 * d,))}")
        split_rows(parts, ["qb", "kb", "vb"], bname, b, [d] * 3, "entries")
    oname = join(p, "c_proj.weight")
    o = ck.get(oname, p)
    if o.dim() != 2:
        fail(f"{oname} has shape {shape_str(o.shape)}, expected a matrix [in, out]")
    parts["o"] = (oname + " (Conv1D, transposed)", o.t().contiguous())
    if ck.has(join(p, "c_proj.bias")):
        parts["ob"] = (join(p, "c_proj.bias"), ck.get(join(p, "c_proj.bias"), p))
    return parts


def family_neox(ck, p, heads):
    """GPT-NeoX's query_key_value [3 d_model, d_model]: rows interleaved per head as [H, 3, d_k]."""
    name = join(p, "query_key_value.weight")
    w = ck.get(name, p)
    if w.dim() != 2 or w.shape[0] != 3 * w.shape[1]:
        fail(f"{name} has shape {shape_str(w.shape)}, expected [3 x d_model, d_model]")
    d = w.shape[1]
    if heads is None or heads <= 0 or d % heads:
        fail(f"--heads {heads} does not divide d_model {d} ({name} has shape {shape_str(w.shape)})")
    d_k = d // heads
    parts = {}
    per_head = w.reshape(heads, 3, d_k, d)
    for j, role in enumerate("qkv"):
        parts[role] = (f"{name} rows [head, {j}, :] (per-head interleaved q, k, v)",
                       per_head[:, j].reshape(d, d).contiguous())
    bname = join(p, "query_key_value.bias")
    if ck.has(bname):
        b = ck.get(bname, p)
        if tuple(b.shape) != (3 * d,):
            fail(f"{bname} has shape {shape_str(b.shape)}, expected {shape_str((3 * d,))}")
        for j, role in enumerate("qkv"):
            parts[role + "b"] = (f"{bname} [head, {j}, :]", b.reshape(heads, 3, d_k)[:, j].reshape(d))
    parts.update(read_linear(ck, p, ["o"], ["dense"]))
    return parts


def family_phi3(ck, p, heads):
    """Phi-3's qkv_proj: rows q [heads d_k] | k [kv_heads d_k] | v [kv_heads d_k]."""
    name = join(p, "qkv_proj.weight")
    w = ck.get(name, p)
    if w.dim() != 2:
        fail(f"{name} has shape {shape_str(w.shape)}, expected a matrix [out, in]")
    d = w.shape[1]
    kv_rows = (w.shape[0] - d) // 2
    if kv_rows <= 0 or w.shape[0] != d + 2 * kv_rows:
        fail(f"{name} has shape {shape_str(w.shape)}, expected [d_model + 2 x kv_heads x d_k, "
             f"d_model] (d_model {d} from its columns)")
    parts = {}
    split_rows(parts, "qkv", name, w, [d, kv_rows, kv_rows], "rows")
    bname = join(p, "qkv_proj.bias")
    if ck.has(bname):
        b = ck.get(bname, p)
        if tuple(b.shape) != (w.shape[0],):
            fail(f"{bname} has shape {shape_str(b.shape)}, expected {shape_str((w.shape[0],))}")
        split_rows(parts, ["qb", "kb", "vb"], bname, b, [d, kv_rows, kv_rows], "entries")
    parts.update(read_linear(ck, p, ["o"], ["o_proj"]))
    return parts


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
    "bert": (("self.query.weight",), family_bert),
    "vit": (("attention.query.weight",), family_vit),
    "distilbert": (("q_lin.weight",), family_distilbert),
    "gpt2": (("c_attn.weight",), family_gpt2),
    "neox": (("query_key_value.weight",), family_neox),
    "phi3": (("qkv_proj.weight",), family_phi3),
    "t5": (("q.weight",), family_t5),
}
# Buffers of older checkpoints under the prefix that the export does not need (GPT-2's and
# GPT-NeoX's causal-mask "bias" and "masked_bias"; rotary inv_freq; xPos's scale; BatchNorm's count)
IGNORED = {"gpt2": ("bias", "masked_bias"), "neox": ("bias", "masked_bias")}
IGNORED_SUFFIXES = ("inv_freq", "xpos.scale", "num_batches_tracked")


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

def build_layer(ck, args):
    from emha_export_hf import HfConfig, layer_prefix, parse_layer  # noqa: E402
    import emha_export_features as feat  # noqa: E402 (both import fail from here)
    layer = None
    if args.layer is not None:
        if args.prefix:
            fail(f"--layer {args.layer} and --prefix {args.prefix}: give one of them")
        args.prefix = layer_prefix(list(ck.tensors), args.layer)
        layer = parse_layer(args.layer)[1]
    p = args.prefix
    hf = HfConfig(ck.config, ck.config_path, p, layer)
    hf.refuse_unsupported()
    module = ck.submodule(p)
    heads, kv_flag = args.heads, args.kv_heads
    where = hf.where
    key, value = hf.heads()
    heads = agree(heads, value, ("--heads", f"{where} {key}"))
    key, value = hf.kv_heads()
    kv_flag = agree(kv_flag, value, ("--kv-heads", f"{where} {key}"))
    if module is not None:
        attr, value = int_attr(module, HEADS_ATTRS)
        heads = agree(heads, value, ("--heads", join(p, attr or "num_heads")))
        attr, value = int_attr(module, KV_HEADS_ATTRS)
        kv_flag = agree(kv_flag, value, ("--kv-heads", join(p, attr or "kv_heads")))
    if heads is None:
        fail("--heads is required: a state_dict does not say how many heads it has")
    family = detect_family(ck, p, args.family)
    if family not in ("proj", "phi3", "t5") and kv_flag is None:
        kv_flag = heads  # GQA is read from K's rows only: the other families have none
    def read_family():
        return (family_per_head(ck, p, heads, kv_flag) if family == "per_head"
                else FAMILIES[family][1](ck, p, heads))

    ck.int8_pass = True  # int8 weights with their scales (emha_export_int8.py): read twice
    parts = read_family()
    given_scales = None
    if ck.int8_read:
        from emha_export_int8 import projection_scales  # noqa: E402
        ck.view = "scales"
        scale_parts = read_family()
        ck.view = "values"
        given_scales = projection_scales(parts, scale_parts)
    ck.int8_pass = False
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

    if hf.present and family != "t5":
        implied = "rope" if hf.uses_rope(family) else "none"
        args.position = agree(args.position, implied, ("--position", f"{where} model_type "
                                                       f"{hf.model_type} ({implied})"))
        if implied == "rope":
            args.rope_pairing = agree(args.rope_pairing, "half",
                                      ("--rope-pairing", f"{where} model_type {hf.model_type} "
                                       "(rotate_half)"))
            key, base = hf.rope_base()
            args.rope_base = agree(args.rope_base, float(base) if base is not None else 10000.0,
                                   ("--rope-base", f"{where} {key or 'rope_theta (default)'}"))
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
    if args.rope_pairing is None:
        args.rope_pairing = "half"
    if args.rope_base is None:
        args.rope_base = 10000.0
    if args.sliding_window is None:
        args.sliding_window = 0
    norm_eps = args.norm_eps
    if family in ("bert", "t5"):
        key, value = hf.norm_eps()
        norm_eps = agree(norm_eps, value, ("--norm-eps", f"{where} {key}"))
        if norm_eps is None and family == "bert":
            fail(f"{join(p, 'output.LayerNorm')}: --norm-eps is required without config.json "
                 "(BERT's layer_norm_eps, 1e-12 in its configs)")
        if norm_eps is None and hf.present:
            norm_eps = 1e-6  # T5Config's layer_norm_epsilon default

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
    norm_kind, norm_affine, nw, nb = "layer_norm", True, None, None
    if norm == "none":
        norm_eps = 1e-5
    if norm != "none":
        norm_kind, norm_eps, norm_affine, nw, nb = read_norm(
            ck, args, heads * d_k if norm == "sub" else d, norm, norm_prefix, norm_eps)
    scale, scale_from = feat.resolve_scale(hf, args, family, d_k, heads)
    head_split = feat.resolve_head_split(args, family, position, d, heads, d_k)

    ignored = {join(p, n) for n in IGNORED.get(family, ())}
    unused = [n for n in ck.under(p) + (ck.under(norm_prefix) if norm_prefix else [])
              if n not in ck.used and n not in ignored
              and not any(n == s or n.endswith("." + s) for s in IGNORED_SUFFIXES)]
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
    scales = None
    if given_scales is not None:  # the checkpoint's int8 weights: their scales, rows as `tensors`
        scales = ({"in_proj_weight": torch.cat([given_scales[r] for r in "qkv"])} if same
                  else {f"{r}_proj_weight": given_scales[r] for r in "qkv"})
        scales["out_proj_weight"] = given_scales["o"]
    if bias["o"]:
        tensors["out_proj_bias"] = parts["ob"][1]
    if nw is not None:
        tensors["norm_weight"] = nw[1]
    if nb is not None:
        tensors["norm_bias"] = nb[1]
    if qn is not None:
        tensors["q_norm_weight"], tensors["k_norm_weight"] = qn[1], kn[1]
    if relative is not None:
        tensors["relative_attention_bias"] = relative[3][1]

    max_seq_q = args.max_seq_q or max(64, args.reference_rows)
    cfg = dict(family=family, d_model=d, heads=heads, kv_heads=kv_heads, d_k=d_k, kdim=kdim,
               vdim=vdim, bias=bias, max_seq_q=max_seq_q,
               max_seq_kv=args.max_seq_kv or max_seq_q, max_batch=args.max_batch,
               max_threads=args.max_threads, prepack=not args.no_prepack,
               attention_weights=not args.no_attention_weights, position=position,
               rope_pairing=args.rope_pairing, rope_dims=rope_dims, rope_base=args.rope_base,
               xpos_scale_base=scale_base if scale_base is not None else 512.0,
               sliding_window=args.sliding_window, norm=norm, norm_kind=norm_kind,
               norm_eps=norm_eps, norm_affine=norm_affine if norm != "none" else True,
               head_dim=d_k, scale=scale, scale_from=scale_from, qk_norm=qk_norm,
               qk_norm_eps=qk_eps, qk_norm_unit_offset=qk_offset, head_split=head_split,
               relative_buckets=relative[0] if relative else 32,
               relative_max_distance=relative[1] if relative else 128,
               relative_bidirectional=relative[2] if relative else True,
               relative_from=relative[3][0] if relative else None,
               outside_norms=hf.outside_norms() if hf.present else None,
               given_scales=scales)
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
    cfg.update(prefix=p, from_config=hf.used, config_file=where if hf.present else None,
               causal=hf.causal(family))
    return cfg, tensors

# SPDX-License-Identifier: Apache-2.0
"""The naming families: where each layout keeps Q, K, V and O, and which one a checkpoint is."""
import torch

from .errors import fail, join, shape_str

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
    out = next((n for n in ("o_proj", "dense") if ck.has(join(p, n + ".weight"))), "out_proj")
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


def family_neox(ck, p, heads, fused="query_key_value", out="dense"):
    """GPT-NeoX's query_key_value [3 d_model, d_model]: rows interleaved per head as [H, 3, d_k]
    (also BLOOM's, Falcon's per-head and GPT-BigCode's per-head c_attn with c_proj)."""
    name = join(p, fused + ".weight")
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
    bname = join(p, fused + ".bias")
    if ck.has(bname):
        b = ck.get(bname, p)
        if tuple(b.shape) != (3 * d,):
            fail(f"{bname} has shape {shape_str(b.shape)}, expected {shape_str((3 * d,))}")
        for j, role in enumerate("qkv"):
            parts[role + "b"] = (f"{bname} [head, {j}, :]", b.reshape(heads, 3, d_k)[:, j].reshape(d))
    parts.update(read_linear(ck, p, ["o"], [out]))
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


def family_falcon(ck, p, heads, kv_heads, layout):
    """Falcon's query_key_value (FalconAttention._split_heads), by config.json's layout:
    grouped (new_decoder_architecture): rows [kv_heads][heads / kv_heads queries, key, value][d_k];
    multi_query: [heads queries | one key | one value] x d_k; per_head: [heads][q, k, v][d_k]
    (GPT-NeoX's). The output projection is dense."""
    name = join(p, "query_key_value.weight")
    w = ck.get(name, p)
    bname = join(p, "query_key_value.bias")
    b = ck.get(bname, p) if ck.has(bname) else None
    if layout == "per_head":
        return family_neox(ck, p, heads)
    groups = kv_heads if layout == "grouped" else 1
    if w.dim() != 2 or heads % groups or w.shape[0] % (heads + 2 * groups):
        fail(f"{name} has shape {shape_str(w.shape)}: not (heads {heads} + 2 x kv_heads {groups}) "
             f"x head_dim rows ({layout} layout)")
    d_k, d = w.shape[0] // (heads + 2 * groups), w.shape[1]
    if b is not None and tuple(b.shape) != (w.shape[0],):
        fail(f"{bname} has shape {shape_str(b.shape)}, expected {shape_str((w.shape[0],))}")
    n = heads // groups
    parts = {}
    for j, role in enumerate("qkv"):
        rows = slice(0, n) if role == "q" else slice(n + j - 1, n + j)
        where = {"q": "queries", "k": "key", "v": "value"}[role]
        parts[role] = (f"{name} rows [group, {where}] ({layout})",
                       w.reshape(groups, n + 2, d_k, d)[:, rows].reshape(-1, d).contiguous())
        if b is not None:
            parts[role + "b"] = (f"{bname} [group, {where}]",
                                 b.reshape(groups, n + 2, d_k)[:, rows].reshape(-1).contiguous())
    parts.update(read_linear(ck, p, ["o"], ["dense"]))
    return parts


def family_bigcode(ck, p, heads, kv_heads, layout):
    """GPT-BigCode's (StarCoder's) c_attn, an nn.Linear [out, in]: multi_query rows
    [d_model queries | d_k key | d_k value]; else per head [heads][q, k, v][d_k]
    (GPTBigCodeAttention.forward's view(..., heads, 3 * head_dim)). c_proj, a Linear, is the output."""
    if layout == "per_head":
        return family_neox(ck, p, heads, "c_attn", "c_proj")
    name, bname = join(p, "c_attn.weight"), join(p, "c_attn.bias")
    w = ck.get(name, p)
    b = ck.get(bname, p) if ck.has(bname) else None
    if w.dim() != 2:
        fail(f"{name} has shape {shape_str(w.shape)}, expected a matrix [out, in]")
    d = w.shape[1]
    if heads <= 0 or d % heads:
        fail(f"heads {heads} do not divide d_model {d} ({name} has shape {shape_str(w.shape)})")
    d_k = d // heads
    want = d + 2 * d_k
    if w.shape[0] != want or (b is not None and tuple(b.shape) != (want,)):
        fail(f"{name} has shape {shape_str(w.shape)} (bias {shape_str(b.shape) if b is not None else 'none'}),"
             f" expected [{want}, {d}] (multi_query: d_model + 2 x head_dim rows)")
    parts = {}
    split_rows(parts, "qkv", name, w, [d, d_k, d_k], "rows")
    if b is not None:
        split_rows(parts, ["qb", "kb", "vb"], bname, b, [d, d_k, d_k], "entries")
    parts.update(read_linear(ck, p, ["o"], ["c_proj"]))
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
    # Laid out by config.json, never chosen by names: Falcon's query_key_value (family_falcon),
    # GPT-BigCode's c_attn (family_bigcode, a Linear where GPT-2's is a Conv1D)
    "falcon": ((), None),
    "bigcode": ((), None),
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


# SPDX-License-Identifier: Apache-2.0
"""The layer features beyond the projections, read from the tensors and
config.json and checked against each other.

head_dim (Q is heads x head_dim wide, decoupled from d_model / heads), QK-norm (q_norm / k_norm:
per head over head_dim, or over the whole projection; Gemma's (1 + w)), the score scale (Gemma's
query_pre_attn_scalar ** -0.5, T5's 1, the blog block's (d_k // heads) ** -0.5), T5's relative
position bias (the [buckets, heads] table of block 0 of the layer's stack) and the blog block's
head split as written (flat_view).
"""
from .errors import agree, fail, join, shape_str
from .hf import t5_bias_prefix


def head_dim_from(hf, args, heads, q_entry):
    """head_dim: config.json's head_dim (T5: d_kv), else Q's rows / heads; --head-dim must agree."""
    key, value = hf.head_dim()
    hd = agree(args.head_dim, int(value) if value is not None else None,
               ("--head-dim", f"{hf.where} {key}"))
    name, q = q_entry
    if hd is not None and q.dim() == 2 and heads and q.shape[0] != heads * hd:
        fail(f"{name} has shape {shape_str(q.shape)}, expected {heads} heads x head_dim {hd} = "
             f"{heads * hd} rows" + (f" ({hf.where} {key} = {value})" if key else ""))
    return hd


def read_qk_norm(ck, p, hf, args, heads, kv_heads, hd):
    """(kind, unit_offset, eps, q_norm entry, k_norm entry); kind none without q_norm/k_norm."""
    qn, kn = join(p, "q_norm.weight"), join(p, "k_norm.weight")
    if not ck.has(qn) and not ck.has(kn):
        kind, _, _, _ = hf.qk_norm()
        if kind is not None:
            fail(f"{hf.where} model_type {hf.model_type} has QK-norm ({kind}), but {qn} and {kn} "
                 f"are missing; {ck.found(p)}")
        return "none", False, 0.0, None, None
    q, k = (qn, ck.get(qn, p)), (kn, ck.get(kn, p))
    by_shape = {(hd,): "per_head", (heads * hd,): "whole"}
    kind = by_shape.get(tuple(q[1].shape)) if heads > 1 else None
    cfg_kind, cfg_offset, eps_key, cfg_eps = hf.qk_norm()
    if cfg_kind is None and hf.present:
        fail(f"{qn} (QK-norm) with {hf.where} model_type {hf.model_type}: not a known QK-norm "
             "model (qwen3, gemma3, olmo2); its placement and eps are not known")
    kind = cfg_kind or kind
    if kind is None:
        fail(f"{qn} has shape {shape_str(q[1].shape)}, expected [head_dim {hd}] (per head) or "
             f"[heads x head_dim {heads * hd}] (whole projection)")
    want_q = (hd,) if kind == "per_head" else (heads * hd,)
    want_k = (hd,) if kind == "per_head" else (kv_heads * hd,)
    for (name, t), want in ((q, want_q), (k, want_k)):
        if tuple(t.shape) != want:
            fail(f"{name} has shape {shape_str(t.shape)}, expected {shape_str(want)} (QK-norm "
                 f"{kind}: " + ("over each head's head_dim)" if kind == "per_head" else
                                "over the whole projection)"))
    offset = cfg_offset if hf.present else bool(args.qk_norm_unit_offset)
    if hf.present and args.qk_norm_unit_offset and not offset:
        fail(f"--qk-norm-unit-offset disagrees with {hf.where} model_type {hf.model_type} "
             "(x_hat * w)")
    eps = agree(args.qk_norm_eps, float(cfg_eps) if cfg_eps is not None else None,
                ("--qk-norm-eps", f"{hf.where} {eps_key}"))
    if eps is None:
        if hf.present:
            eps = 1e-6  # Qwen3Config / Gemma3TextConfig default rms_norm_eps
        else:
            fail(f"{qn}: QK-norm needs --qk-norm-eps without config.json (its rms_norm_eps; a "
                 "state_dict does not say)")
    if eps < 0:
        fail(f"--qk-norm-eps {eps} is negative")
    return kind, offset, eps, q, k


def read_relative_bias(ck, p, hf, args, heads):
    """T5: (buckets, max_distance, bidirectional, table entry) from block 0 of the layer's stack
    (only block 0 holds the table; a layer that holds its own, UMT5's, uses it)."""
    own = join(p, "relative_attention_bias.weight")
    name = own if ck.has(own) else join(t5_bias_prefix(p), "relative_attention_bias.weight")
    if not ck.has(name):
        fail(f"{name} (T5's relative position bias, held by block 0 of the stack) is missing; "
             f"{ck.found(t5_bias_prefix(p))}")
    ck.used.add(name)
    table = ck.get(name, p)
    if hf.present:
        buckets, distance, bidirectional = hf.relative_bias()
    else:
        buckets = table.shape[0] if table.dim() == 2 else 0
        distance = args.relative_max_distance or 128
        bidirectional = "decoder" not in p.split(".")
    distance = agree(args.relative_max_distance, distance,
                     ("--relative-max-distance", f"{hf.where} relative_attention_max_distance"))
    if tuple(table.shape) != (buckets, heads):
        fail(f"{name} has shape {shape_str(table.shape)}, expected [{buckets}, {heads}] "
             "(relative_attention_num_buckets, heads)")
    bidirectional_buckets = buckets // 2 if bidirectional else buckets
    if bidirectional_buckets < 2 or distance <= bidirectional_buckets // 2:
        fail(f"relative_attention_num_buckets {buckets} and max_distance {distance}: the bucket "
             "function needs max_distance above its exact range and at least 2 buckets per side")
    return buckets, distance, bidirectional, (name, table)


def blog_scale(d_k, heads):
    """The blog block's score scale as written: (d_k // heads) ** -0.5."""
    if d_k // heads == 0:
        fail(f"the blog block's scale (d_k // heads) ** -0.5 with d_k {d_k} and {heads} heads "
             "divides by zero (the module itself fails the same way); give --scale")
    return (d_k // heads) ** -0.5


def resolve_scale(hf, args, family, d_k, heads):
    """(scale, where from): 0.0 = 1/sqrt(head_dim). config.json's wins over nothing; --scale must
    agree with it; the linear family's default is the blog's quirk."""
    key, value = hf.scale(d_k)
    if key is not None:
        if args.scale is not None and abs(args.scale - value) > 1e-6 * abs(value):
            fail(f"--scale {args.scale:g} disagrees with {hf.where} {key} (scale {value:g})")
        return value, f"{hf.where} {key}"
    if args.scale is not None:
        if args.scale < 0:
            fail(f"--scale {args.scale} is negative")
        return args.scale, "--scale"
    if family == "linear":
        return blog_scale(d_k, heads), "the blog's (d_k // heads) ** -0.5"
    if family == "t5":
        return 1.0, "T5 (unscaled scores)"
    return 0.0, None


def resolve_head_split(args, family, position, d, heads, d_k):
    split = args.head_split or ("flat_view" if family == "linear" else "columns")
    if split == "flat_view":
        if heads * d_k != d:
            fail(f"--head-split flat_view needs heads x head_dim = d_model ({heads} x {d_k} != {d})")
        if position != "none":
            fail(f"--head-split flat_view has no positions (--position {position}): the blog "
                 "block's flat view has no per-token head rows to rotate")
    return split

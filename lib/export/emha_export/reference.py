# SPDX-License-Identifier: Apache-2.0
"""The reference, the exported layer's forward in float64.

ALiBi slopes, RoPE, xPos, T5's relative position buckets, QK-norm and the norms, reference_forward
on one layer (self-attention, batch 1) with the module's own semantics as the Config states them
(head_dim, score scale, QK-norm, the blog block's flat head split), and make_reference: the seeded
input and its output that the blob and the header carry for emha-run's check.
"""
import math

import torch

from . import rope_scaling as rs
from .errors import fail

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
    """HF Llama's rotary embedding on the first rope_dims of each head, with its scaling (cos and
    sin times the attention factor); x [heads, n, d_k]."""
    n, d_rot = x.shape[1], cfg["rope_dims"]
    inv_freq, factor = rs.inv_freq_f64(cfg.get("rope_scaling"), cfg["rope_base"], d_rot)
    freqs = torch.arange(n, dtype=torch.float64)[:, None] * inv_freq[None]
    half = cfg["rope_pairing"] == "half"
    emb = torch.cat((freqs, freqs), -1) if half else freqs.repeat_interleave(2, -1)
    rot = x[..., :d_rot]
    rot = rot * (emb.cos() * factor) + \
        (rotate_half(rot) if half else rotate_every_two(rot)) * (emb.sin() * factor)
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


def relative_bucket(rel, bidirectional, num_buckets, max_distance):
    """T5's _relative_position_bucket, exactly (its log in float32, truncated toward zero);
    rel = key position - query position, a long tensor."""
    buckets = torch.zeros_like(rel)
    if bidirectional:
        num_buckets //= 2
        buckets += (rel > 0).long() * num_buckets
        n = rel.abs()
    else:
        n = -torch.min(rel, torch.zeros_like(rel))
    max_exact = num_buckets // 2
    large = max_exact + (torch.log(n.float() / max_exact) / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).long()
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    return buckets + torch.where(n < max_exact, n, large)


def qk_normalize(x, cfg, w):
    """QK-norm of x [n, heads * d_k] (whole) or per head of x [heads, n, d_k] (per_head)."""
    y = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + cfg["qk_norm_eps"])
    return y * (1 + w) if cfg["qk_norm_unit_offset"] else y * w


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


def split_heads(y, n, heads, d_k, flat):
    """[n, heads * d_k] -> [heads, n, d_k]: per-head columns, or the blog's flat view."""
    return y.reshape(heads, n, d_k) if flat else y.view(n, heads, d_k).transpose(0, 1)


def reference_forward(cfg, tensors, x, causal):
    """x [n, d_model] float64 -> the layer's output [n, d_model] float64."""
    t = {k: v.double() for k, v in tensors.items()}
    h, kvh, d_k = cfg["heads"], cfg["kv_heads"], cfg["d_k"]
    q_dim, kv_dim, n = h * d_k, kvh * d_k, x.shape[0]
    flat = cfg["head_split"] == "flat_view"
    nw, nb = t.get("norm_weight"), t.get("norm_bias")
    inp = normalize(x, cfg, nw, nb) if cfg["norm"] == "pre" else x
    w = t["in_proj_weight"]
    widths = [q_dim, kv_dim, kv_dim]
    starts = [0, q_dim, q_dim + kv_dim]
    bias_all = t.get("in_proj_bias")
    proj, bias_at = [], 0
    for i, r in enumerate("qkv"):
        y = inp @ w[starts[i]:starts[i] + widths[i]].T
        if cfg["bias"][r]:
            y = y + bias_all[bias_at:bias_at + widths[i]]
            bias_at += widths[i]
        proj.append(y)
    if cfg["qk_norm"] == "whole":
        proj[0] = qk_normalize(proj[0], cfg, t["q_norm_weight"])
        proj[1] = qk_normalize(proj[1], cfg, t["k_norm_weight"])
    q = split_heads(proj[0], n, h, d_k, flat)
    k = split_heads(proj[1], n, kvh, d_k, flat)
    v = split_heads(proj[2], n, kvh, d_k, flat)
    if cfg["qk_norm"] == "per_head":
        q, k = qk_normalize(q, cfg, t["q_norm_weight"]), qk_normalize(k, cfg, t["k_norm_weight"])
    if cfg["position"] == "rope":
        q, k = rope(q, cfg), rope(k, cfg)
    elif cfg["position"] == "xpos":
        q, k = xpos(q, cfg["xpos_scale_base"], False), xpos(k, cfg["xpos_scale_base"], True)
    k, v = k.repeat_interleave(h // kvh, 0), v.repeat_interleave(h // kvh, 0)
    scale = float(cfg["scale"]) if cfg["scale"] else d_k ** -0.5
    scores = (q @ k.transpose(1, 2)) * scale  # [h, n, n]
    if cfg.get("softcap"):  # Gemma 2: cap * tanh(s / cap), before biases and masks
        scores = torch.tanh(scores / cfg["softcap"]) * cfg["softcap"]
    pos = torch.arange(n)
    behind = pos[:, None] - pos[None, :]  # query i minus key j
    if cfg["position"] == "alibi":
        slopes = torch.tensor(get_slopes(h), dtype=torch.float64)
        scores = scores - slopes[:, None, None] * behind.abs().double()[None]
    elif cfg["position"] == "relative_bias":
        bucket = relative_bucket(-behind, cfg["relative_bidirectional"], cfg["relative_buckets"],
                                 cfg["relative_max_distance"])
        scores = scores + t["relative_attention_bias"][bucket].permute(2, 0, 1)
    blocked = torch.zeros(n, n, dtype=torch.bool)
    if causal:
        blocked |= behind < 0
    if cfg["sliding_window"]:
        blocked |= behind >= cfg["sliding_window"]
    scores = scores.masked_fill(blocked[None], float("-inf"))
    ctx = torch.softmax(scores, -1) @ v  # [h, n, d_k]
    ctx = ctx.reshape(n, q_dim) if flat else ctx.transpose(0, 1).reshape(n, q_dim)
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

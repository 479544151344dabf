# SPDX-License-Identifier: Apache-2.0
"""Generate C++ fixtures for emha from the attention modules users port ("seed" modules), in PyTorch.

tests/attention/gen_fixtures.py covers torch.nn.MultiheadAttention; this script re-implements, as
nn.Modules and with the originals' torch expressions in the originals' order, the other attention
blocks emha is meant to replace:

  BlogEncoderAttention  the "Attention Is All You Need" encoder attention block of the widely copied
                        blog version as written (its flat .view(batch * heads, -1, d_k) head split,
                        post-LN, the (d_k // heads) ** -0.5 scale, -inf masking)
  BlogColumnsAttention  the same block with the conventional head split and -1e9 masking (not the
                        blog's code)
  TorchscaleMHA         microsoft/torchscale component/multihead_attention.py (+ XPOS from
                        component/xpos_relative_position.py), non-flash path
  LabmlMHA              labml.ai annotated MultiHeadAttention, labml_nn/transformers/mha.py
  PerHeadMHA            one nn.Linear(d_model, d_k) per head for Q, K and V (nbdev / NLP-book style)
  FeatureMHA            a reference "modern" block: HF Llama RoPE, ALiBi, pre-/post-/sub-LN with
                        LayerNorm or HF LlamaRMSNorm

For every case it builds a seeded module (torch.manual_seed(zlib.crc32(name)); default nn.Linear /
nn.LayerNorm init, then every bias uniform(-0.5, 0.5), every norm weight uniform(0.5, 1.5)), draws
inputs and masks (re-drawing masks until no query row is fully masked), runs the module in float32
(`out`, `attn_weights`) and a float64 copy of it (`module.double()`, the same inputs, angles and
slopes computed in double) as the truth (`out_f64`), and writes

    tests/attention/seed_fixtures/<name>.hpp   one `struct emha::seed_fixtures::<name>` per case
    tests/attention/seed_fixtures/all.hpp      `emha::seed_fixtures::all` (std::tuple of every case)
                                               and `emha::seed_fixtures::small` (fewer than
                                               SMALL_LIMIT array elements: the MCU firmware's list)

Run from the repository root (deterministic; overwrites only tests/attention/seed_fixtures/):

    /usr/bin/python3 tests/attention/gen_seed_fixtures.py

Every struct has the same members (one C++ template reads any fixture). The weights are given in
emha's layout: in_proj_weight [3D, D] = W_q, W_k, W_v rows (torch Linear [out, in]); in_proj_bias =
the biases of those projections that have one, in q, k, v order; the mapping from each module's
state_dict is the `*_to_emha` function next to the module. Absent arrays are
`static constexpr const float* x = nullptr;`; in self-attention cases key and value are references to
query. Floats are exact hex-float literals, -inf is `-std::numeric_limits<float>::infinity()`.
"""
import copy
import math
import pathlib
import sys
import zlib
from contextlib import contextmanager

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

sys.dont_write_bytecode = True
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "kernels"))
from gen_fixtures import array_member, float_literal, render_all  # noqa: E402
from gen_kernel_fixtures import (  # noqa: E402  the kernels' re-implementations, shared
    blog_sinusoidal, get_slopes, rotate_every_two, rotate_half, xpos_forward)
from gen_rope_scaling_fixtures import cpp_scaling, f64_inv_freq, hf_inv_freq  # noqa: E402

OUT_DIR = pathlib.Path(__file__).resolve().parent / "seed_fixtures"
SMALL_LIMIT = 20000  # array elements (weights + inputs + masks + outputs, not out_f64): "small"
NEG_INF = float("-inf")

ARRAYS = ["in_proj_weight", "in_proj_bias", "out_proj_weight", "out_proj_bias", "norm_weight",
          "norm_bias", "query", "key", "value", "key_padding_mask", "attn_mask_additive",
          "score_bias", "attend_mask", "out", "attn_weights", "out_f64"]
BOOL_ARRAYS = {"key_padding_mask", "attend_mask"}
DOUBLE_ARRAYS = {"out_f64"}

# Header scalars and their values when a case does not set them.
POSITION = {"none": 0, "rope": 1, "xpos": 2, "alibi": 3}
NORM = {"none": 0, "post": 1, "pre": 2, "sub": 3}
NORM_KIND = {"layer_norm": 0, "rms_norm": 1}
HEAD_SPLIT = {"columns": 0, "flat_view": 1}
DEFAULT_META = dict(batch_first=True, self_attention=True, causal=False, q_bias=True, k_bias=True,
                    v_bias=True, out_bias=True, position="none", rope_pairing="half", rope_dims=0,
                    rope_base=10000.0, norm="none", norm_kind="layer_norm", norm_eps=1e-5,
                    norm_affine=False, scale=0.0, add_sinusoidal=False, need_weights=False,
                    average_attn_weights=False, attend_rows=0, attend_batch=0, kv_heads=0,
                    sliding_window=0, decode_prefill=0, head_split="columns",
                    config_scale=False)


# --------------------------------------------------------------------------------------------------
# Shared helpers

@contextmanager
def default_dtype(dtype):
    """The float64 truth: tensors a module makes without an explicit dtype (torchscale's
    fixed_pos_embedding's arange(0, dim) / dim) are float64 too."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


def randomize(module):
    """Non-trivial affine parameters on top of the default init: every Linear bias
    uniform(-0.5, 0.5), every LayerNorm/RMSNorm weight uniform(0.5, 1.5) and LayerNorm bias
    uniform(-0.5, 0.5), in module registration order."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.Linear) and m.bias is not None:
                m.bias.uniform_(-0.5, 0.5)
            elif isinstance(m, nn.LayerNorm) and m.elementwise_affine:
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
            elif isinstance(m, LlamaRMSNorm):
                m.weight.uniform_(0.5, 1.5)
    return module.eval()


def float64_copy(module):
    """The same module in float64: parameters and buffers cast (exact)."""
    return copy.deepcopy(module).double()


def cat_present(tensors):
    tensors = [t for t in tensors if t is not None]
    return torch.cat(tensors) if tensors else None


def norm_params(norm):
    """(norm_weight, norm_bias) of an nn.LayerNorm / LlamaRMSNorm / None."""
    if norm is None:
        return None, None
    if isinstance(norm, nn.LayerNorm):
        return (norm.weight, norm.bias) if norm.elementwise_affine else (None, None)
    return norm.weight, None  # LlamaRMSNorm: a weight, no bias


def seq_tensor(batch, seq, dim, batch_first):
    return torch.randn((batch, seq, dim) if batch_first else (seq, batch, dim))


def causal_blocked(seq_q, seq_kv):
    """True where key j > query i (what a causal mask hides)."""
    return torch.triu(torch.ones(seq_q, seq_kv, dtype=torch.bool), diagonal=1)


def window_blocked(seq, window):
    """True where key j is `window` or more positions behind query i (a sliding window of W keys,
    the query's own included: HF eager's band), for window > 0."""
    pos = torch.arange(seq)
    return (pos[:, None] - pos[None, :]) >= window


def redraw(name, draw, blocked):
    """Call draw() until blocked(masks) -- a bool [..., S_q, S_kv], True = key hidden -- leaves
    every query row at least one key."""
    for _ in range(100):
        masks = draw()
        if not bool(blocked(masks).all(dim=-1).any()):
            return masks
    raise RuntimeError(f"{name}: could not draw masks without a fully masked row")


# --------------------------------------------------------------------------------------------------
# 1. The blog encoder attention block ("Attention Is All You Need", the widely copied blog
#    version): post-LN, scores scaled by (d_k // heads) ** -0.5 (its quirk).
#
#    BlogEncoderAttention is the block as written: the heads are split by a flat
#    .view(batch * heads, -1, d_k) with no transpose, so for batch item b head h is the h-th block of
#    S * d_k consecutive floats of the projected [S, D] buffer (a flat [H, S, d_k] view), the context
#    is viewed back the same way, and masked scores are -inf. BlogColumnsAttention is the same block
#    with the conventional head split (.view(batch, -1, heads, d_k).transpose(1, 2), head h = columns
#    h*d_k .. h*d_k + d_k - 1 of every row) and -1e9 masks: not the blog's code, kept as a fixture
#    of the conventional split with the blog's scale and post-LN.

class BlogEncoderAttention(nn.Module):
    """The blog's MultiHeadAttention + post-LN as written (dropout off: eval)."""
    def __init__(self, d_model, heads):
        super().__init__()
        self.d_model = d_model
        self.heads = heads
        self.d_k = d_model // heads
        self.linear_q = nn.Linear(d_model, d_model)
        self.linear_k = nn.Linear(d_model, d_model)
        self.linear_v = nn.Linear(d_model, d_model)
        self.linear_final = nn.Linear(d_model, d_model)
        self.layer_norm = nn.LayerNorm(d_model)
        self.scale = (self.d_k // self.heads) ** -0.5  # the blog's quirk (not d_k ** -0.5)

    def forward(self, q, k, v, mask=None):
        # q, k, v: [B, S, D]; mask: [B, S_q, S_kv], 0 = masked
        residual = q
        batch = q.size(0)
        q = self.linear_q(q).view(batch * self.heads, -1, self.d_k)  # no transpose: a flat view
        k = self.linear_k(k).view(batch * self.heads, -1, self.d_k)
        v = self.linear_v(v).view(batch * self.heads, -1, self.d_k)
        scores = torch.bmm(q, k.transpose(1, 2)) * self.scale  # [B * H, S_q, S_kv]
        if mask is not None:
            # The bmm's row b * H + h is batch item b's head h: each item's mask is repeated H times
            # in a row. (The blog's mask.repeat(heads, 1, 1) tiles the batch instead, row i getting
            # item i % B's mask; that differs from its own view for B > 1, and emha applies item b's
            # mask to item b.)
            mask = mask.repeat_interleave(self.heads, 0)
            scores = scores.masked_fill(mask == 0, float("-inf"))
        attn = torch.softmax(scores, dim=-1)
        ctx = torch.bmm(attn, v).view(batch, -1, self.d_k * self.heads)
        out = self.linear_final(ctx)
        return self.layer_norm(residual + out)


class BlogColumnsAttention(BlogEncoderAttention):
    """The blog block with the conventional head split and -1e9 masks, not the blog's code."""
    def forward(self, q, k, v, mask=None):
        # q, k, v: [B, S, D]; mask: [B, S_q, S_kv], 0 = masked
        residual = q
        batch = q.size(0)
        q = self.linear_q(q).view(batch, -1, self.heads, self.d_k).transpose(1, 2)
        k = self.linear_k(k).view(batch, -1, self.heads, self.d_k).transpose(1, 2)
        v = self.linear_v(v).view(batch, -1, self.heads, self.d_k).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale
        if mask is not None:
            scores = scores.masked_fill(mask[:, None] == 0, -1e9)
        attn = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(attn, v)
        ctx = ctx.transpose(1, 2).contiguous().view(batch, -1, self.d_model)
        out = self.linear_final(ctx)
        return self.layer_norm(residual + out)


def blog_to_emha(m):
    # in_proj_weight = cat(linear_q.weight, linear_k.weight, linear_v.weight)
    # in_proj_bias   = cat(linear_q.bias, linear_k.bias, linear_v.bias)
    # out_proj_*     = linear_final.weight / .bias;  norm_* = layer_norm.weight / .bias
    return dict(in_proj_weight=torch.cat([m.linear_q.weight, m.linear_k.weight, m.linear_v.weight]),
                in_proj_bias=torch.cat([m.linear_q.bias, m.linear_k.bias, m.linear_v.bias]),
                out_proj_weight=m.linear_final.weight, out_proj_bias=m.linear_final.bias,
                norm_weight=m.layer_norm.weight, norm_bias=m.layer_norm.bias)


BLOG_SPLIT_GAP = {}  # name -> max |as written - conventional split| on the same weights (printed)


def blog_case(name, d_model, heads, seq, batch, masked, as_written):
    """as_written: BlogEncoderAttention, head_split flat_view and the scale in Config::scale;
    otherwise BlogColumnsAttention, head_split columns and the scale in ForwardOptions::scale."""
    torch.manual_seed(zlib.crc32(name.encode()))
    module = BlogEncoderAttention if as_written else BlogColumnsAttention
    m = randomize(module(d_model, heads))
    emb = torch.randn(batch, seq, d_model)  # the fixture's query; the test adds emha's table
    pe = blog_sinusoidal(seq, d_model)
    causal = causal_blocked(seq, seq)
    padding = None
    if masked:  # the blog's pad mask (key token == 0), drawn directly: True = pad
        padding = redraw(name, lambda: torch.rand(batch, seq) < 0.3,
                         lambda p: p[:, None, :] | causal[None])
    # the blog's mask: pad mask [B, 1, S] & sequence mask [1, S, S], 1 = attend; no row is fully
    # masked (redraw), so the -inf masks give no NaN row
    mask = None if padding is None else (~padding)[:, None, :] & (~causal)[None]
    with torch.no_grad():
        x = emb + pe
        out = m(x, x, x, mask)
        x64 = emb.double() + pe.double()
        out64 = float64_copy(m)(x64, x64, x64, mask)
        if as_written:  # the same weights through the conventional split: how far apart they are
            other = BlogColumnsAttention(d_model, heads)
            other.load_state_dict(m.state_dict())
            other = float64_copy(other.eval())
            BLOG_SPLIT_GAP[name] = float((other(x64, x64, x64, mask) - out64).abs().max())
    if as_written:
        module_text = ("Attention Is All You Need encoder attention block, blog version as written "
                       "(flat .view(batch * heads, -1, d_k) head split, post-LN, (d_k // heads) ** -0.5 "
                       "scale, -inf masks, input emb + sinusoidal)")
    else:
        module_text = ("the blog encoder attention block with the conventional head split, not the "
                       "blog's code (.view(batch, -1, heads, d_k).transpose(1, 2), post-LN, "
                       "(d_k // heads) ** -0.5 scale, -1e9 masks, input emb + sinusoidal)")
    meta = dict(module=module_text, d_model=d_model, heads=heads, seq_q=seq, seq_kv=seq, batch=batch,
                causal=masked, norm="post", norm_kind="layer_norm", norm_eps=m.layer_norm.eps,
                norm_affine=True, scale=m.scale, add_sinusoidal=True,
                head_split="flat_view" if as_written else "columns", config_scale=as_written)
    arrays = dict(blog_to_emha(m), query=emb, key=emb, value=emb, key_padding_mask=padding,
                  out=out, out_f64=out64)
    return meta, arrays


# --------------------------------------------------------------------------------------------------
# 2. torchscale (microsoft/torchscale) component/multihead_attention.py MultiheadAttention,
#    self-attention, non-flash path (attention_ops), with XPOS from
#    component/xpos_relative_position.py. MultiwayWrapper (multiway=False) is the plain module.
#    Default nn.Linear init (torchscale's reset_parameters is not called).

class XPOS(nn.Module):
    """torchscale's XPOS: its forward is tests/kernels/gen_kernel_fixtures.py's xpos_forward (the
    same torch expressions; its per-pair base comes in the default dtype, float64 for the truth).
    Its buffer `scale` as torchscale registers it: a saved state_dict holds xpos.scale."""
    def __init__(self, head_dim, scale_base=512):
        super().__init__()
        self.head_dim = head_dim
        self.scale_base = scale_base
        self.register_buffer(
            "scale", (torch.arange(0, head_dim, 2) + 0.4 * head_dim) / (1.4 * head_dim))

    def forward(self, x, offset=0, downscale=False):
        return xpos_forward(x, self.head_dim, offset, downscale, self.scale_base)


class TorchscaleMHA(nn.Module):
    def __init__(self, embed_dim, num_heads, xpos=False, subln=False, layernorm_eps=1e-5,
                 xpos_scale_base=512):
        super().__init__()
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.scaling = self.head_dim ** -0.5
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=True)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=True)
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=True)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=True)
        self.inner_attn_ln = nn.LayerNorm(embed_dim, eps=layernorm_eps) if subln else None
        self.xpos = XPOS(self.head_dim, xpos_scale_base) if xpos else None

    def attention_ops(self, q, k, v, key_padding_mask=None, attn_mask=None, rel_pos=None):
        q = q * self.scaling  # torchscale: q *= self.scaling (after xPos)
        attn_weights = torch.bmm(q, k.transpose(1, 2))
        if attn_mask is not None:
            attn_weights = torch.nan_to_num(attn_weights)
            attn_mask = attn_mask.unsqueeze(0)
            attn_weights += attn_mask
        if key_padding_mask is not None:
            bsz = attn_weights.size(0) // self.num_heads
            attn_weights = attn_weights.view(bsz, self.num_heads, *attn_weights.shape[1:])
            attn_weights = attn_weights.masked_fill(
                key_padding_mask.unsqueeze(1).unsqueeze(2).to(torch.bool), float("-inf"))
            attn_weights = attn_weights.view(bsz * self.num_heads, *attn_weights.shape[2:])
        if rel_pos is not None:
            rel_pos = rel_pos.view(attn_weights.size())
            attn_weights = attn_weights + rel_pos
        # torchscale: softmax(dtype=torch.float32).type_as(...), an upcast for half precision; the
        # float64 truth keeps float64 (a float32 softmax would make it a float32 result).
        softmax_dtype = torch.float64 if attn_weights.dtype == torch.float64 else torch.float32
        attn_weights = F.softmax(attn_weights, dim=-1, dtype=softmax_dtype).type_as(attn_weights)
        attn = torch.bmm(attn_weights, v)
        # rearrange(attn, '(b h) l d -> b l (h d)')
        bh, length, d = attn.shape
        attn = attn.view(bh // self.num_heads, self.num_heads, length, d).transpose(1, 2)
        attn = attn.reshape(bh // self.num_heads, length, self.num_heads * d)
        return attn, attn_weights

    def forward(self, query, key, value, key_padding_mask=None, attn_mask=None, rel_pos=None):
        bsz, tgt_len, embed_dim = query.size()
        src_len = key.size(1)
        q = self.q_proj(query)
        k = self.k_proj(key)
        v = self.v_proj(value)
        # rearrange(t, 'b l (h d) -> (b h) l d')
        q = q.view(bsz, tgt_len, self.num_heads, self.head_dim).transpose(1, 2).reshape(
            bsz * self.num_heads, tgt_len, self.head_dim)
        k = k.view(bsz, src_len, self.num_heads, self.head_dim).transpose(1, 2).reshape(
            bsz * self.num_heads, src_len, self.head_dim)
        v = v.view(bsz, src_len, self.num_heads, self.head_dim).transpose(1, 2).reshape(
            bsz * self.num_heads, src_len, self.head_dim)
        if self.xpos is not None:
            k = self.xpos(k, offset=0, downscale=True)
            q = self.xpos(q, offset=0, downscale=False)
        attn, attn_weights = self.attention_ops(q, k, v, key_padding_mask=key_padding_mask,
                                                attn_mask=attn_mask, rel_pos=rel_pos)
        if self.inner_attn_ln is not None:
            attn = self.inner_attn_ln(attn)
        attn = self.out_proj(attn)
        # torchscale returns attn_weights as [(b h), t, s], b-major: the same memory as [B, H, T, S]
        return attn, attn_weights.view(bsz, self.num_heads, tgt_len, src_len)

    def decode(self, x, state, is_first_step, attn_mask=None):
        """torchscale's incremental path (incremental_state): x [B, L, D] the new tokens; K and V
        cached before xPos (prev_key/prev_value), xPos re-applied to all of them at every step
        (offset 0, downscale), the query's offset src_len - 1 after the first step."""
        bsz, tgt_len, embed_dim = x.size()
        split = lambda t: t.view(bsz, tgt_len, self.num_heads, self.head_dim).transpose(1, 2).reshape(
            bsz * self.num_heads, tgt_len, self.head_dim)  # noqa: E731
        q, k, v = split(self.q_proj(x)), split(self.k_proj(x)), split(self.v_proj(x))
        if "prev_key" in state:
            k = torch.cat([state["prev_key"], k], dim=1)
            v = torch.cat([state["prev_value"], v], dim=1)
        state["prev_key"], state["prev_value"] = k, v
        src_len = k.size(1)
        if self.xpos is not None:
            offset = 0 if is_first_step else src_len - 1
            k = self.xpos(k, offset=0, downscale=True)
            q = self.xpos(q, offset=offset, downscale=False)
        attn, _ = self.attention_ops(q, k, v, attn_mask=attn_mask)
        if self.inner_attn_ln is not None:
            attn = self.inner_attn_ln(attn)
        return self.out_proj(attn)


def torchscale_to_emha(m):
    # in_proj_weight = cat(q_proj.weight, k_proj.weight, v_proj.weight)
    # in_proj_bias   = cat(q_proj.bias, k_proj.bias, v_proj.bias)
    # out_proj_*     = out_proj.weight / .bias;  norm_* = inner_attn_ln.weight / .bias (subln)
    nw, nb = norm_params(m.inner_attn_ln)
    return dict(in_proj_weight=torch.cat([m.q_proj.weight, m.k_proj.weight, m.v_proj.weight]),
                in_proj_bias=torch.cat([m.q_proj.bias, m.k_proj.bias, m.v_proj.bias]),
                out_proj_weight=m.out_proj.weight, out_proj_bias=m.out_proj.bias,
                norm_weight=nw, norm_bias=nb)


def torchscale_decode_case(name, embed_dim, heads, seq, batch, prefill):
    """torchscale incremental decoding with xPos and sub-LN (decoder.py's is_first_step): the
    first `prefill` tokens in one step with the causal attn_mask, then one token per step with
    no mask; out (and the float64 out_f64) are the steps' outputs, concatenated."""
    torch.manual_seed(zlib.crc32(name.encode()))
    m = randomize(TorchscaleMHA(embed_dim, heads, xpos=True, subln=True))
    x = torch.randn(batch, seq, embed_dim)

    def run(module, x):
        state, outs = {}, []
        causal = torch.zeros(prefill, prefill, dtype=x.dtype).masked_fill(
            causal_blocked(prefill, prefill), NEG_INF)
        outs.append(module.decode(x[:, :prefill], state, True, attn_mask=causal))
        for t in range(prefill, seq):
            outs.append(module.decode(x[:, t:t + 1], state, False))
        return torch.cat(outs, dim=1)

    with torch.no_grad():
        out = run(m, x)
        with default_dtype(torch.float64):
            out64 = run(float64_copy(m), x.double())
    meta = dict(module=f"torchscale MultiheadAttention (xpos, subln), incremental decoding: a "
                       f"{prefill}-token first step, then one token per step",
                d_model=embed_dim, heads=heads, seq_q=seq, seq_kv=seq, batch=batch, causal=True,
                position="xpos", norm="sub", norm_kind="layer_norm", norm_eps=m.inner_attn_ln.eps,
                norm_affine=True, decode_prefill=prefill)
    arrays = dict(torchscale_to_emha(m), query=x, key=x, value=x, out=out, out_f64=out64)
    return meta, arrays


def torchscale_case(name, embed_dim, heads, seq, batch, xpos, subln, masks):
    """masks: "none" | "all" (key_padding_mask + additive attn_mask with -inf + rel_pos) |
    "causal" (the causal mask given as the additive attn_mask)."""
    torch.manual_seed(zlib.crc32(name.encode()))
    m = randomize(TorchscaleMHA(embed_dim, heads, xpos=xpos, subln=subln))
    x = torch.randn(batch, seq, embed_dim)
    padding = attn_mask = rel_pos = None
    if masks == "all":
        def draw():
            kpm = torch.rand(batch, seq) < 0.3
            am = (torch.randn(seq, seq) * 0.5).masked_fill(torch.rand(seq, seq) < 0.15, NEG_INF)
            return kpm, am
        padding, attn_mask = redraw(name, draw, lambda p: p[0][:, None, :] | (p[1] == NEG_INF)[None])
        rel_pos = torch.randn(batch * heads, seq, seq) * 0.5
    elif masks == "causal":
        attn_mask = torch.zeros(seq, seq).masked_fill(causal_blocked(seq, seq), NEG_INF)
    with torch.no_grad():
        out, weights = m(x, x, x, key_padding_mask=padding, attn_mask=attn_mask, rel_pos=rel_pos)
        with default_dtype(torch.float64):
            x64 = x.double()
            out64, _ = float64_copy(m)(
                x64, x64, x64, key_padding_mask=padding,
                attn_mask=None if attn_mask is None else attn_mask.double(),
                rel_pos=None if rel_pos is None else rel_pos.double())
    features = [f for f, on in (("xpos", xpos), ("subln", subln)) if on]
    features += {"none": [], "all": ["key_padding_mask", "attn_mask", "rel_pos"],
                 "causal": ["causal attn_mask"]}[masks]
    meta = dict(module="torchscale MultiheadAttention (" + (", ".join(features) or "plain") + ")",
                d_model=embed_dim, heads=heads, seq_q=seq, seq_kv=seq, batch=batch,
                position="xpos" if xpos else "none", norm="sub" if subln else "none",
                norm_kind="layer_norm",
                norm_eps=m.inner_attn_ln.eps if subln else 1e-5, norm_affine=subln,
                need_weights=True, average_attn_weights=False)
    arrays = dict(torchscale_to_emha(m), query=x, key=x, value=x, key_padding_mask=padding,
                  attn_mask_additive=attn_mask, score_bias=rel_pos, out=out, attn_weights=weights,
                  out_f64=out64)
    return meta, arrays


# --------------------------------------------------------------------------------------------------
# 3. labml.ai annotated MultiHeadAttention (labml_nn/transformers/mha.py), sequence-first.

class PrepareForMultiHeadAttention(nn.Module):
    def __init__(self, d_model, heads, d_k, bias):
        super().__init__()
        self.linear = nn.Linear(d_model, heads * d_k, bias=bias)
        self.heads = heads
        self.d_k = d_k

    def forward(self, x):
        head_shape = x.shape[:-1]
        x = self.linear(x)
        x = x.view(*head_shape, self.heads, self.d_k)
        return x


class LabmlMHA(nn.Module):
    def __init__(self, heads, d_model, bias=True):
        super().__init__()
        self.d_k = d_model // heads
        self.heads = heads
        self.query = PrepareForMultiHeadAttention(d_model, heads, self.d_k, bias=bias)
        self.key = PrepareForMultiHeadAttention(d_model, heads, self.d_k, bias=bias)
        self.value = PrepareForMultiHeadAttention(d_model, heads, self.d_k, bias=True)
        self.softmax = nn.Softmax(dim=1)
        self.output = nn.Linear(d_model, d_model)
        self.scale = 1 / math.sqrt(self.d_k)

    def prepare_mask(self, mask, query_shape, key_shape):
        assert mask.shape[0] == 1 or mask.shape[0] == query_shape[0]
        assert mask.shape[1] == key_shape[0]
        assert mask.shape[2] == 1 or mask.shape[2] == query_shape[1]
        mask = mask.unsqueeze(-1)
        return mask

    def forward(self, *, query, key, value, mask=None):
        seq_len, batch_size, _ = query.shape
        if mask is not None:
            mask = self.prepare_mask(mask, query.shape, key.shape)
        query = self.query(query)
        key = self.key(key)
        value = self.value(value)
        scores = torch.einsum('ibhd,jbhd->ijbh', query, key)
        scores *= self.scale
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float('-inf'))
        attn = self.softmax(scores)
        x = torch.einsum("ijbh,jbhd->ibhd", attn, value)
        x = x.reshape(seq_len, batch_size, -1)
        return self.output(x)


def labml_to_emha(m):
    # in_proj_weight = cat(query.linear.weight, key.linear.weight, value.linear.weight)
    # in_proj_bias   = cat of query.linear.bias, key.linear.bias, value.linear.bias that exist
    #                  (bias=False: value.linear.bias alone)
    # out_proj_*     = output.weight / .bias
    lin = (m.query.linear, m.key.linear, m.value.linear)
    return dict(in_proj_weight=torch.cat([p.weight for p in lin]),
                in_proj_bias=cat_present([p.bias for p in lin]),
                out_proj_weight=m.output.weight, out_proj_bias=m.output.bias)


def labml_case(name, d_model, heads, seq_q, seq_kv, batch, bias, mask_kind):
    """mask_kind "causal": [S, S, 1] lower-triangular ones (self-attention);
    "random": [1, S_kv, B] with ~25% zeros (cross-attention)."""
    torch.manual_seed(zlib.crc32(name.encode()))
    m = randomize(LabmlMHA(heads, d_model, bias=bias))
    self_attention = mask_kind == "causal"
    query = torch.randn(seq_q, batch, d_model)
    key, value = (query, query) if self_attention else (torch.randn(seq_kv, batch, d_model),
                                                        torch.randn(seq_kv, batch, d_model))
    if mask_kind == "causal":
        mask = torch.tril(torch.ones(seq_q, seq_kv, dtype=torch.bool))[:, :, None]
    else:
        mask = redraw(name, lambda: torch.rand(1, seq_kv, batch) >= 0.25,
                      lambda a: (~a).permute(2, 0, 1))  # [B, rows, S_kv]
    with torch.no_grad():
        out = m(query=query, key=key, value=value, mask=mask)
        out64 = float64_copy(m)(query=query.double(), key=key.double(), value=value.double(),
                                mask=mask)
    meta = dict(module=f"labml.ai annotated MultiHeadAttention (bias={bias}, "
                       f"{'self' if self_attention else 'cross'}-attention, mask "
                       f"[{mask.shape[0]}, S_kv, {mask.shape[2]}])",
                d_model=d_model, heads=heads, seq_q=seq_q, seq_kv=seq_kv, batch=batch,
                batch_first=False, self_attention=self_attention, q_bias=bias, k_bias=bias,
                attend_rows=mask.shape[0], attend_batch=mask.shape[2])
    arrays = dict(labml_to_emha(m), query=query, key=key, value=value, attend_mask=mask, out=out,
                  out_f64=out64)
    return meta, arrays


# --------------------------------------------------------------------------------------------------
# 4. One nn.Linear(d_model, d_k) per head for Q, K and V (nbdev / "NLP with Transformers" book
#    style: AttentionHead + torch.cat of the heads + output_linear), batch-first, no masks.

class PerHeadMHA(nn.Module):
    def __init__(self, d_model, heads):
        super().__init__()
        self.d_k = d_model // heads
        self.q_heads = nn.ModuleList(nn.Linear(d_model, self.d_k) for _ in range(heads))
        self.k_heads = nn.ModuleList(nn.Linear(d_model, self.d_k) for _ in range(heads))
        self.v_heads = nn.ModuleList(nn.Linear(d_model, self.d_k) for _ in range(heads))
        self.output_linear = nn.Linear(d_model, d_model)

    @staticmethod
    def scaled_dot_product_attention(query, key, value):
        dim_k = query.size(-1)
        scores = torch.bmm(query, key.transpose(1, 2)) / math.sqrt(dim_k)
        weights = F.softmax(scores, dim=-1)
        return torch.bmm(weights, value)

    def forward(self, hidden_state):
        x = torch.cat([self.scaled_dot_product_attention(q(hidden_state), k(hidden_state),
                                                         v(hidden_state))
                       for q, k, v in zip(self.q_heads, self.k_heads, self.v_heads)], dim=-1)
        return self.output_linear(x)


def per_head_to_emha(m):
    # in_proj_weight = cat([h.weight for h in q_heads] + [.. k_heads] + [.. v_heads]): head h's
    #                  rows are h*d_k .. (h+1)*d_k - 1 of W_q, W_k, W_v
    # in_proj_bias   = cat([h.bias for h in q_heads] + [.. k_heads] + [.. v_heads])
    # out_proj_*     = output_linear.weight / .bias
    heads = list(m.q_heads) + list(m.k_heads) + list(m.v_heads)
    return dict(in_proj_weight=torch.cat([h.weight for h in heads]),
                in_proj_bias=torch.cat([h.bias for h in heads]),
                out_proj_weight=m.output_linear.weight, out_proj_bias=m.output_linear.bias)


def per_head_case(name, d_model, heads, seq, batch):
    torch.manual_seed(zlib.crc32(name.encode()))
    m = randomize(PerHeadMHA(d_model, heads))
    x = torch.randn(batch, seq, d_model)
    with torch.no_grad():
        out = m(x)
        out64 = float64_copy(m)(x.double())
    meta = dict(module="per-head nn.Linear(d_model, d_k) for Q, K, V, heads concatenated, "
                       "output nn.Linear (nbdev / NLP-book style)",
                d_model=d_model, heads=heads, seq_q=seq, seq_kv=seq, batch=batch)
    arrays = dict(per_head_to_emha(m), query=x, key=x, value=x, out=out, out_f64=out64)
    return meta, arrays


# --------------------------------------------------------------------------------------------------
# 5. A reference "modern" block for the feature cases: q_proj/k_proj/v_proj/o_proj, scores
#    (q k^T) * d_k ** -0.5, HF Llama RoPE (rotate_half or GPT-J interleaved pairs, partial), ALiBi,
#    one LayerNorm / HF LlamaRMSNorm placed post, pre or sub. Self-attention.

class LlamaRMSNorm(nn.Module):
    # transformers' LlamaRMSNorm (modeling_llama.py)
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        # HF: .to(torch.float32), an upcast for half precision; the float64 truth stays float64
        hidden_states = hidden_states.to(torch.promote_types(input_dtype, torch.float32))
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


def scaling_case(scaling, base, d_rot):
    """A case of gen_rope_scaling_fixtures: config.json's rope_scaling (here with its model's
    max_position_embeddings) and the rotary's base and width."""
    rope = {k: v for k, v in scaling.items() if k != "max_position_embeddings"}
    return dict(rope_scaling=rope, rope_theta=base, dim=d_rot,
                max_position_embeddings=scaling.get("max_position_embeddings", 0))


def rope_cos_sin(seq, d_rot, base, pairing, dtype, scaling=None):
    # transformers' LlamaRotaryEmbedding: inv_freq from an int64 arange (or a rope_scaling's,
    # gen_rope_scaling_fixtures.hf_inv_freq; its float64 formulas for the truth), one product with
    # the positions, cos and sin times the attention factor; dtype float32 as HF, float64 for the
    # truth
    attention_factor = 1.0
    if scaling is None:
        inv_freq = 1.0 / (base ** (torch.arange(0, d_rot, 2, dtype=torch.int64).to(dtype) / d_rot))
    else:
        c = scaling_case(scaling, base, d_rot)
        if dtype == torch.float64:
            inv_freq, attention_factor = torch.tensor(f64_inv_freq(c)), hf_inv_freq(c)[1]
        else:
            inv_freq, attention_factor = hf_inv_freq(c)
    positions = torch.arange(seq)
    freqs = positions.to(dtype)[:, None] * inv_freq[None, :]
    if pairing == "half":
        emb = torch.cat((freqs, freqs), dim=-1)
    else:
        emb = torch.repeat_interleave(freqs, 2, dim=-1)
    if scaling is None:
        return emb.cos(), emb.sin()
    return emb.cos() * attention_factor, emb.sin() * attention_factor


def apply_rope(x, cos, sin, d_rot, pairing):
    # x [B, H, S, d_k]; the first d_rot dims of each head rotate, the rest pass through
    rot, rest = x[..., :d_rot], x[..., d_rot:]
    rotate = rotate_half if pairing == "half" else rotate_every_two
    rot = (rot * cos) + (rotate(rot) * sin)
    return torch.cat((rot, rest), dim=-1)


class FeatureMHA(nn.Module):
    """kv_heads < heads: GQA/MQA as HF Llama (k_proj/v_proj [kv_heads * d_k, d_model]; query head
    h reads K/V head h // (heads // kv_heads): repeat_interleave, HF's repeat_kv)."""
    def __init__(self, d_model, heads, bias=True, batch_first=True, causal=True, position="none",
                 rope_pairing="half", rope_dims=0, rope_base=10000.0, norm="none",
                 norm_kind="layer_norm", norm_eps=1e-5, norm_affine=True, kv_heads=0,
                 sliding_window=0, rope_scaling=None):
        super().__init__()
        self.d_model, self.heads, self.d_k = d_model, heads, d_model // heads
        self.kv_heads = kv_heads or heads
        self.window = sliding_window
        self.batch_first, self.causal, self.position = batch_first, causal, position
        self.rope_pairing, self.rope_base = rope_pairing, rope_base
        self.rope_dims = rope_dims or self.d_k
        self.rope_scaling = rope_scaling  # config.json's rope_scaling + max_position_embeddings
        self.norm_place = norm
        self.scaling = self.d_k ** -0.5
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, self.kv_heads * self.d_k, bias=bias)
        self.v_proj = nn.Linear(d_model, self.kv_heads * self.d_k, bias=bias)
        self.o_proj = nn.Linear(d_model, d_model, bias=bias)
        if norm == "none":
            self.norm = None
        elif norm_kind == "layer_norm":
            self.norm = nn.LayerNorm(d_model, eps=norm_eps, elementwise_affine=norm_affine)
        else:
            assert norm_affine
            self.norm = LlamaRMSNorm(d_model, eps=norm_eps)

    def attention(self, h, key_padding_mask):
        # h [B, S, D] -> the heads' context [B, S, D] (concatenated heads)
        b, s, _ = h.shape
        split = lambda t, n: t.view(b, s, n, self.d_k).transpose(1, 2)  # noqa: E731
        q = split(self.q_proj(h), self.heads)
        k, v = split(self.k_proj(h), self.kv_heads), split(self.v_proj(h), self.kv_heads)
        if self.position == "rope":  # on projected q and k (after the bias), before scaling
            cos, sin = rope_cos_sin(s, self.rope_dims, self.rope_base, self.rope_pairing, h.dtype,
                                    self.rope_scaling)
            q = apply_rope(q, cos, sin, self.rope_dims, self.rope_pairing)
            k = apply_rope(k, cos, sin, self.rope_dims, self.rope_pairing)
        group = self.heads // self.kv_heads  # torch 1.13 has no enable_gqa: repeat the K/V heads
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        scores = torch.matmul(q, k.transpose(-2, -1)) * self.scaling  # [B, H, S, S]
        if self.position == "alibi":  # - slope_h * |i - j|, on the scaled scores
            slopes = torch.tensor(get_slopes(self.heads), dtype=h.dtype)
            pos = torch.arange(s)
            distance = (pos[:, None] - pos[None, :]).abs().to(h.dtype)
            scores = scores - slopes[:, None, None] * distance[None]
        if self.causal:
            scores = scores.masked_fill(causal_blocked(s, s), float("-inf"))
        if self.window:  # Mistral's band: keys p - W + 1 .. p
            scores = scores.masked_fill(window_blocked(s, self.window), float("-inf"))
        if key_padding_mask is not None:
            scores = scores.masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
        p = torch.softmax(scores, dim=-1)
        return torch.matmul(p, v).transpose(1, 2).reshape(b, s, self.d_model)

    def forward(self, x, key_padding_mask=None):
        if not self.batch_first:
            x = x.transpose(0, 1)
        if self.norm_place == "pre":  # out = x + MHA(Norm(x))
            out = x + self.o_proj(self.attention(self.norm(x), key_padding_mask))
        elif self.norm_place == "sub":  # out = o_proj(Norm(heads))
            out = self.o_proj(self.norm(self.attention(x, key_padding_mask)))
        elif self.norm_place == "post":  # out = Norm(x + MHA(x))
            out = self.norm(x + self.o_proj(self.attention(x, key_padding_mask)))
        else:
            out = self.o_proj(self.attention(x, key_padding_mask))
        return out if self.batch_first else out.transpose(0, 1)


def feature_to_emha(m):
    # in_proj_weight = cat(q_proj.weight, k_proj.weight, v_proj.weight)
    # in_proj_bias   = cat(q_proj.bias, k_proj.bias, v_proj.bias) (absent with bias=False)
    # out_proj_*     = o_proj.weight / .bias;  norm_* = norm.weight (/ .bias: LayerNorm)
    nw, nb = norm_params(m.norm)
    return dict(in_proj_weight=torch.cat([m.q_proj.weight, m.k_proj.weight, m.v_proj.weight]),
                in_proj_bias=cat_present([m.q_proj.bias, m.k_proj.bias, m.v_proj.bias]),
                out_proj_weight=m.o_proj.weight, out_proj_bias=m.o_proj.bias,
                norm_weight=nw, norm_bias=nb)


def feature_case(name, description, d_model, heads, seq, batch, padding=False, **options):
    torch.manual_seed(zlib.crc32(name.encode()))
    m = randomize(FeatureMHA(d_model, heads, **options))
    x = seq_tensor(batch, seq, d_model, m.batch_first)
    kpm = None
    if padding:
        blocked = causal_blocked(seq, seq) if m.causal else torch.zeros(seq, seq, dtype=torch.bool)
        if m.window:
            blocked = blocked | window_blocked(seq, m.window)
        kpm = redraw(name, lambda: torch.rand(batch, seq) < 0.3, lambda p: p[:, None, :] | blocked)
    with torch.no_grad():
        out = m(x, kpm)
        out64 = float64_copy(m)(x.double(), kpm)
    bias = options.get("bias", True)
    norm = options.get("norm", "none")
    meta = dict(module=description, d_model=d_model, heads=heads, seq_q=seq, seq_kv=seq,
                batch=batch, batch_first=m.batch_first, causal=m.causal, q_bias=bias, k_bias=bias,
                v_bias=bias, out_bias=bias, position=m.position, norm=norm,
                norm_kind=options.get("norm_kind", "layer_norm"), kv_heads=m.kv_heads,
                sliding_window=m.window)
    if m.position == "rope":
        meta.update(rope_pairing=m.rope_pairing, rope_dims=m.rope_dims, rope_base=m.rope_base)
        if m.rope_scaling is not None:
            meta.update(rope_scaling=cpp_scaling(scaling_case(m.rope_scaling, m.rope_base,
                                                              m.rope_dims)))
    if norm != "none":
        meta.update(norm_eps=options.get("norm_eps", 1e-5),
                    norm_affine=options.get("norm_affine", True))
    arrays = dict(feature_to_emha(m), query=x, key=x, value=x, key_padding_mask=kpm, out=out,
                  out_f64=out64)
    return meta, arrays


# --------------------------------------------------------------------------------------------------
# The cases

CASES = [
    ("blog_encoder", lambda n: blog_case(n, 32, 4, 7, 2, masked=True, as_written=True)),
    ("blog_encoder_nomask", lambda n: blog_case(n, 48, 3, 6, 1, masked=False, as_written=True)),
    ("blog_encoder_columns", lambda n: blog_case(n, 32, 4, 7, 2, masked=True, as_written=False)),
    ("torchscale_xpos_subln",
     lambda n: torchscale_case(n, 32, 4, 9, 2, xpos=True, subln=True, masks="all")),
    ("torchscale_plain", lambda n: torchscale_case(n, 24, 3, 6, 1, xpos=False, subln=False,
                                                   masks="none")),
    ("torchscale_xpos_causal",
     lambda n: torchscale_case(n, 64, 4, 12, 1, xpos=True, subln=False, masks="causal")),
    ("torchscale_xpos_decode",
     lambda n: torchscale_decode_case(n, 32, 4, 10, 2, prefill=4)),
    ("labml_nobias", lambda n: labml_case(n, 32, 4, 8, 8, 2, bias=False, mask_kind="causal")),
    ("labml_bias_cross", lambda n: labml_case(n, 24, 2, 5, 9, 3, bias=True, mask_kind="random")),
    ("per_head_linear", lambda n: per_head_case(n, 32, 4, 6, 2)),
    ("rope_half", lambda n: feature_case(
        n, "reference MHA, HF Llama RoPE (rotate_half, base 10000, full head), causal, no biases",
        32, 4, 10, 2, bias=False, position="rope", rope_pairing="half", rope_base=10000.0)),
    ("rope_interleaved_partial", lambda n: feature_case(
        n, "reference MHA, RoPE interleaved pairs (GPT-J), base 500000, 4 of 8 dims, causal, "
           "seq-first", 32, 4, 9, 1, batch_first=False, position="rope",
        rope_pairing="interleaved", rope_dims=4, rope_base=500000.0)),
    ("rope_llama3", lambda n: feature_case(
        n, "reference MHA, HF RoPE with Llama 3.1's scaling (llama3: factor 8, low 1, high 4, "
           "original 64: one pair kept, one blended, two divided), GQA 4 on 2, causal", 32, 4, 10,
        2, kv_heads=2, bias=False, position="rope", rope_scaling=dict(
            rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
            original_max_position_embeddings=64))),
    ("rope_yarn_partial", lambda n: feature_case(
        n, "reference MHA, HF RoPE with yarn scaling (factor 256 / 64, ramp over pairs 0-2, "
           "attention factor 0.1 ln 4 + 1), 12 of 16 dims, causal", 32, 2, 9, 1,
        position="rope", rope_dims=12, rope_scaling=dict(
            rope_type="yarn", factor=4.0, original_max_position_embeddings=64,
            max_position_embeddings=256))),
    ("alibi_h6", lambda n: feature_case(
        n, "reference MHA, ALiBi (get_slopes, 6 heads), causal", 48, 6, 11, 2, position="alibi")),
    ("alibi_h12_bidirectional", lambda n: feature_case(
        n, "reference MHA, ALiBi (get_slopes, 12 heads), bidirectional -slope*|i-j|", 48, 12, 7,
        1, causal=False, position="alibi")),
    ("pre_ln_rms", lambda n: feature_case(
        n, "reference MHA, pre-LN HF LlamaRMSNorm (eps 1e-6), key_padding_mask", 32, 2, 8, 2,
        padding=True, causal=False, norm="pre", norm_kind="rms_norm", norm_eps=1e-6)),
    ("pre_ln_layernorm", lambda n: feature_case(
        n, "reference MHA, pre-LN nn.LayerNorm, RoPE rotate_half, causal", 24, 3, 6, 1,
        position="rope", rope_pairing="half", norm="pre", norm_kind="layer_norm",
        norm_eps=1e-5)),
    ("sub_ln_rms_alibi", lambda n: feature_case(
        n, "reference MHA, sub-LN HF LlamaRMSNorm (eps 1e-6) before o_proj, ALiBi, causal", 32,
        4, 7, 1, position="alibi", norm="sub", norm_kind="rms_norm", norm_eps=1e-6)),
    ("gqa_rope", lambda n: feature_case(
        n, "reference MHA, GQA: 8 query heads on 2 K/V heads (repeat_interleave), HF RoPE "
           "rotate_half, causal", 32, 8, 9, 2, kv_heads=2, position="rope")),
    ("mqa_alibi", lambda n: feature_case(
        n, "reference MHA, MQA: 4 query heads on 1 K/V head, ALiBi, causal, no biases", 32, 4, 8,
        1, kv_heads=1, bias=False, position="alibi")),
    ("gqa_padding_pre_ln", lambda n: feature_case(
        n, "reference MHA, GQA 6 on 3, pre-LN nn.LayerNorm, key_padding_mask, causal", 48, 6, 10,
        2, kv_heads=3, padding=True, norm="pre", norm_kind="layer_norm", norm_eps=1e-5)),
    ("window_gqa_rope", lambda n: feature_case(
        n, "reference MHA, sliding window of 4 keys (Mistral's band), GQA 4 on 2, HF RoPE "
           "rotate_half, causal", 32, 4, 14, 2, kv_heads=2, position="rope", sliding_window=4)),
    ("window_alibi_padding", lambda n: feature_case(
        n, "reference MHA, sliding window of 5 keys, ALiBi, key_padding_mask, pre-LN RMSNorm, "
           "causal", 24, 3, 12, 2, padding=True, position="alibi", sliding_window=5, norm="pre",
        norm_kind="rms_norm", norm_eps=1e-6)),
    ("post_ln_noaffine", lambda n: feature_case(
        n, "reference MHA, post-LN nn.LayerNorm(elementwise_affine=False), causal, seq-first",
        16, 2, 5, 3, batch_first=False, norm="post", norm_kind="layer_norm", norm_eps=1e-5,
        norm_affine=False)),
]

MEMBERS = set(DEFAULT_META) | {"name", "module", "d_model", "heads", "seq_q", "seq_kv",
                                "batch"} | set(ARRAYS)
assert not MEMBERS & {n for n, _ in CASES}, "a struct cannot have a member named like itself"


# --------------------------------------------------------------------------------------------------
# Rendering

def to_numpy(arrays):
    """Tensors -> numpy in header order (None = absent); floats as float32, out_f64 as double."""
    result = {}
    for name in ARRAYS:
        t = arrays.get(name)
        if t is None:
            result[name] = None
            continue
        t = t.detach()
        if name in BOOL_ARRAYS:
            assert t.dtype == torch.bool, name
        elif name in DOUBLE_ARRAYS:
            assert t.dtype == torch.float64, name
        else:
            assert t.dtype == torch.float32, name
        result[name] = t.contiguous().numpy()
    return result


def render_header(name, meta, arrays):
    m = dict(DEFAULT_META, **meta)
    b = lambda v: "true" if v else "false"  # noqa: E731
    assert '"' not in m["module"] and "\n" not in m["module"]
    lines = [
        f"// Generated by tests/attention/gen_seed_fixtures.py (torch {torch.__version__}). "
        "Do not edit.",
        "#pragma once", "#include <cstddef>", "#include <limits>"] + (
        ['#include "emha/kernels/rope.hpp"'] if "rope_scaling" in m else []) + [
        "namespace emha::seed_fixtures {", f"struct {name} {{",
        f'  static constexpr const char* name = "{name}";',
        f'  static constexpr const char* module = "{m["module"]}";',
        f"  static constexpr std::size_t d_model = {m['d_model']}, heads = {m['heads']}, "
        f"seq_q = {m['seq_q']}, seq_kv = {m['seq_kv']}, batch = {m['batch']};",
        f"  static constexpr std::size_t kv_heads = {m['kv_heads'] or m['heads']};  "
        "// K/V heads (GQA/MQA when < heads)",
        f"  static constexpr std::size_t sliding_window = {m['sliding_window']};  "
        "// keys a query keeps, its own included (0: all)",
        f"  static constexpr std::size_t decode_prefill = {m['decode_prefill']};  "
        "// > 0: out is incremental decoding's (a first step of this many tokens, then one per step)",
        f"  static constexpr bool batch_first = {b(m['batch_first'])};  "
        "// query/key/value/out: [B,S,D] if true else [S,B,D]",
        f"  static constexpr bool self_attention = {b(m['self_attention'])};  "
        "// key and value are the query tensor",
        f"  static constexpr bool causal = {b(m['causal'])};  "
        "// the test sets emha's causal mask (torch got -inf above the diagonal)",
        f"  static constexpr bool q_bias = {b(m['q_bias'])}, k_bias = {b(m['k_bias'])}, "
        f"v_bias = {b(m['v_bias'])}, out_bias = {b(m['out_bias'])};",
        f"  static constexpr int position = {POSITION[m['position']]};  "
        "// 0 none, 1 rope, 2 xpos, 3 alibi",
        f"  static constexpr int rope_pairing = {0 if m['rope_pairing'] == 'half' else 1};  "
        "// 0 half (rotate_half), 1 interleaved (2i, 2i+1)",
        f"  static constexpr std::size_t rope_dims = {m['rope_dims']};  "
        "// rotated dims per head (0 when position != rope)",
        f"  static constexpr float rope_base = {float_literal(m['rope_base'])};  "
        "// 10000.0f when unused",
    ] + ([f"  static constexpr emha::RopeScalingParams rope_scaling = {m['rope_scaling']};  "
          "// HF's rope_scaling (absent: none)"] if "rope_scaling" in m else []) + [
        f"  static constexpr int norm = {NORM[m['norm']]};  // 0 none, 1 post-LN, 2 pre-LN, 3 sub-LN",
        f"  static constexpr int norm_kind = {NORM_KIND[m['norm_kind']]};  "
        "// 0 LayerNorm, 1 RMSNorm",
        f"  static constexpr float norm_eps = {float_literal(m['norm_eps'])};  "
        "// 1e-5f when unused",
        f"  static constexpr bool norm_affine = {b(m['norm_affine'])};  "
        "// norm has a weight (and, LayerNorm, a bias)",
        f"  static constexpr float scale = {float_literal(m['scale'])};  "
        "// 0.0f: 1/sqrt(d_k); else the module's scale (blog quirk)",
        f"  static constexpr bool config_scale = {b(m['config_scale'])};  "
        "// scale goes to Config::scale if true, ForwardOptions::scale if false",
        f"  static constexpr int head_split = {HEAD_SPLIT[m['head_split']]};  "
        "// 0 columns, 1 flat_view (per item, head h = the h-th S*d_k floats of [S, D])",
        f"  static constexpr bool add_sinusoidal = {b(m['add_sinusoidal'])};  "
        "// test adds emha's sinusoidal table to query first",
        f"  static constexpr bool need_weights = {b(m['need_weights'])};  // attn_weights present",
        f"  static constexpr bool average_attn_weights = {b(m['average_attn_weights'])};  "
        "// attn_weights [B,Sq,Skv] if true, [B,H,Sq,Skv] if false",
        f"  static constexpr std::size_t attend_rows = {m['attend_rows']};  "
        "// labml mask: S_q or 1 (0 when absent)",
        f"  static constexpr std::size_t attend_batch = {m['attend_batch']};  "
        "// labml mask: B or 1 (0 when absent)",
    ]
    for member, arr in arrays.items():
        if m["self_attention"] and member in ("key", "value"):  # the query tensor: no second copy
            lines.append(f"  static constexpr const float (&{member})[{arr.size}] = query;")
        else:
            lines += array_member(member, arr, BOOL_ARRAYS)
    lines += ["};", "}  // namespace emha::seed_fixtures", ""]
    return "\n".join(lines)


def check(name, meta, arrays):
    """Shapes against the header scalars, finite outputs."""
    m = dict(DEFAULT_META, **meta)
    d, sq, skv, bt = m["d_model"], m["seq_q"], m["seq_kv"], m["batch"]
    seq = lambda s: (bt, s, d) if m["batch_first"] else (s, bt, d)  # noqa: E731
    kv = (m["kv_heads"] or m["heads"]) * (d // m["heads"])  # K and V width
    n_bias = m["q_bias"] * d + (m["k_bias"] + m["v_bias"]) * kv
    expect = {"in_proj_weight": (d + 2 * kv, d), "in_proj_bias": (n_bias,) if n_bias else None,
              "out_proj_weight": (d, d), "out_proj_bias": (d,) if m["out_bias"] else None,
              "query": seq(sq), "key": seq(skv), "value": seq(skv), "out": seq(sq),
              "out_f64": seq(sq)}
    for k, shape in expect.items():
        arr = arrays[k]
        assert (arr is None and shape is None) or arr.shape == shape, (name, k)
    for k in ("out", "attn_weights", "out_f64"):
        assert arrays[k] is None or np.isfinite(arrays[k]).all(), f"{name}: non-finite {k}"
    assert (arrays["attn_weights"] is not None) == m["need_weights"], name
    assert (arrays["norm_weight"] is not None) == (m["norm"] != "none" and m["norm_affine"]), name


def main():
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    small, rows = [], []
    for name, make in CASES:
        meta, tensors = make(name)
        arrays = to_numpy(tensors)
        check(name, meta, arrays)
        # as gen_fixtures.py: every array but out_f64 counts, key and value too in self-attention
        count = sum(a.size for n, a in arrays.items() if a is not None and n != "out_f64")
        if count < SMALL_LIMIT:
            small.append(name)
        (OUT_DIR / f"{name}.hpp").write_text(render_header(name, meta, arrays))
        err = float(np.abs(arrays["out"].astype(np.float64) - arrays["out_f64"]).max())
        rows.append((name, count, err))
    (OUT_DIR / "all.hpp").write_text(render_all([n for n, _ in CASES], small, "gen_seed_fixtures.py",
                                                 "emha::seed_fixtures"))
    print(f"{'name':26s} {'elements':>8s}  torch f32 max |out - out_f64|")
    for name, count, err in rows:
        print(f"{name:26s} {count:8d}  {err:.3e}{'' if name in small else '  (not small)'}")
    for name, gap in BLOG_SPLIT_GAP.items():
        print(f"{name}: max |as written - conventional head split| (float64, same weights) {gap:.3f}")


if __name__ == "__main__":
    main()

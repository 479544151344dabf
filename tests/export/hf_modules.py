# SPDX-License-Identifier: Apache-2.0
"""PyTorch re-implementations of Hugging Face transformers' attention layers (the `transformers`
package is not a dependency), written from the published modeling code's math, in its order, with
its parameter names: each module's state_dict is the checkpoint's, under the layer's prefix.
Eager attention, inference (no dropout); x [B, S, E] -> [B, S, E]. The files followed (in
huggingface/transformers, src/transformers/models/; the commits are the ones
../../../shared/PRIOR-ART-HF.md read):
  BertAttention      bert/modeling_bert.py @004ad5f5 (BertSelfAttention + BertSelfOutput)
  ViTAttention       vit/modeling_vit.py @005db820 (ViTSelfAttention + ViTSelfOutput); DINOv2's and
                     DeiT's (dinov2/modeling_dinov2.py, deit/modeling_deit.py) are ViT's, copied
  DistilBertAttention distilbert/modeling_distilbert.py @00b326f4 (MultiHeadSelfAttention)
  GPT2Attention      gpt2/modeling_gpt2.py @0010f602 (+ pytorch_utils.Conv1D)
  GPTNeoXAttention   gpt_neox/modeling_gpt_neox.py @006bd23d
  GPTJAttention      gptj/modeling_gptj.py @00b676f8 (create_sinusoidal_positions, rotate_every_two,
                     apply_rotary_pos_emb on the first rotary_dim of each head; _attn in float32)
  Phi3Attention      phi3/modular_phi3.py @2b6c089d (+ llama's eager_attention_forward, repeat_kv,
                     rotate_half, apply_rotary_pos_emb; masking_utils' sliding window)
  LlamaAttention     llama/modeling_llama.py @5dd4a635 (Mistral's sliding window as above); a rope_scaling as
                     modeling_rope_utils.py computes it: tests/kernels/gen_rope_scaling_fixtures.py
  Qwen3Attention     qwen3/modeling_qwen3.py @9ee3f431 (Qwen3RMSNorm q_norm/k_norm per head on
                     proj(x).view(B, S, -1, head_dim), before the transpose and RoPE)
  Gemma3Attention    gemma3/modeling_gemma3.py @f14d0cbc (Gemma3RMSNorm: (1 + w), after the
                     transpose, before RoPE; scaling = query_pre_attn_scalar ** -0.5; sliding layers
                     use rope_local_base_freq, full layers rope_theta)
  Olmo2Attention     olmo2/modular_olmo2.py @46474e67 (q_norm [H*hd], k_norm [Hkv*hd] on the whole
                     projection, before the head split)
  T5Attention        t5/modeling_t5.py @6b8b757d (T5Attention with compute_bias and
                     _relative_position_bucket; T5LayerSelfAttention: x + attn(T5LayerNorm(x)))
"""
import math
import pathlib
import sys

import torch
from torch import nn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "kernels"))
from gen_rope_scaling_fixtures import hf_inv_freq  # noqa: E402


def finfo_min(t):
    return torch.finfo(t.dtype).min


class Conv1D(nn.Module):
    """pytorch_utils.Conv1D: weight [nx, nf] ([in, out]), y = x W + b."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.2)
        self.bias = nn.Parameter(torch.rand(nf) - 0.5)

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


def sub(**children):
    m = nn.Module()
    for name, child in children.items():
        m.add_module(name, child)
    return m


class BertAttention(nn.Module):
    def __init__(self, hidden, heads, eps):
        super().__init__()
        self.heads, self.hd = heads, hidden // heads
        self.add_module("self", sub(query=nn.Linear(hidden, hidden), key=nn.Linear(hidden, hidden),
                                    value=nn.Linear(hidden, hidden)))
        self.output = sub(dense=nn.Linear(hidden, hidden), LayerNorm=nn.LayerNorm(hidden, eps=eps))

    def transpose_for_scores(self, x):
        return x.view(x.size()[:-1] + (self.heads, self.hd)).permute(0, 2, 1, 3)

    def forward(self, hidden_states):
        s = self._modules["self"]
        q = self.transpose_for_scores(s.query(hidden_states))
        k = self.transpose_for_scores(s.key(hidden_states))
        v = self.transpose_for_scores(s.value(hidden_states))
        scores = torch.matmul(q, k.transpose(-1, -2))
        scores = scores / math.sqrt(self.hd)
        probs = nn.functional.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        ctx = ctx.view(ctx.size()[:-2] + (self.heads * self.hd,))
        return self.output.LayerNorm(self.output.dense(ctx) + hidden_states)  # BertSelfOutput


class ViTAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads, self.hd = heads, hidden // heads
        self.attention = sub(query=nn.Linear(hidden, hidden), key=nn.Linear(hidden, hidden),
                             value=nn.Linear(hidden, hidden))
        self.output = sub(dense=nn.Linear(hidden, hidden))

    def forward(self, x):
        B, S, _ = x.shape
        split = lambda t: t.view(B, S, self.heads, self.hd).transpose(1, 2)  # noqa: E731
        a = self.attention
        q, k, v = split(a.query(x)), split(a.key(x)), split(a.value(x))
        w = torch.matmul(q, k.transpose(2, 3)) * self.hd ** -0.5  # eager_attention_forward
        w = nn.functional.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype) if q.dtype == \
            torch.float32 else nn.functional.softmax(w, dim=-1)
        ctx = torch.matmul(w, v).transpose(1, 2).reshape(B, S, -1)
        return self.output.dense(ctx)  # ViTSelfOutput: no residual, no norm


def bloom_alibi(heads, S):
    """build_alibi_tensor without padding: float32 slopes (pow of a float32 base) times the key's
    position, [heads, 1, S]."""
    closest = 2 ** math.floor(math.log2(heads))
    base = torch.tensor(2 ** (-(2 ** -(math.log2(closest) - 3))), dtype=torch.float32)
    slopes = torch.pow(base, torch.arange(1, 1 + closest, dtype=torch.int32))
    if closest != heads:
        extra = torch.tensor(2 ** (-(2 ** -(math.log2(2 * closest) - 3))), dtype=torch.float32)
        n = min(closest, heads - closest)
        slopes = torch.cat([slopes, torch.pow(extra, torch.arange(1, 1 + 2 * n, 2,
                                                                   dtype=torch.int32))])
    return slopes[:, None, None] * torch.arange(S, dtype=torch.float32)[None, None]


class BloomBlockAttention(nn.Module):
    """BLOOM's block up to its attention's residual: x + BloomAttention(input_layernorm(x))
    (bloom/modeling_bloom.py @0078a6cd, BloomBlock with apply_residual_connection_post_layernorm
    false; inv_norm_factor 1 / sqrt(head_dim) and beta 1 as the later releases, whose
    layer_number factors cancel in exact arithmetic): query_key_value rows [H][q|k|v][hd],
    baddbmm(alibi, q, k^T, beta=1, alpha=1/sqrt(hd)), the causal mask finfo.min, softmax in
    float32, dense, + x. The weights live under self_attention and input_layernorm."""

    def __init__(self, hidden, heads, eps):
        super().__init__()
        self.heads, self.hd = heads, hidden // heads
        self.input_layernorm = nn.LayerNorm(hidden, eps=eps)
        self.self_attention = sub(query_key_value=nn.Linear(hidden, 3 * hidden),
                                  dense=nn.Linear(hidden, hidden))

    def forward(self, x):
        B, S, D = x.shape
        h = self.input_layernorm(x)
        fused = self.self_attention.query_key_value(h).reshape(B, S, self.heads, 3 * self.hd)
        q, k, v = (t.transpose(1, 2).reshape(B * self.heads, S, self.hd)
                   for t in torch.split(fused, self.hd, dim=-1))
        alibi = bloom_alibi(self.heads, S).to(x.dtype).repeat(B, 1, 1)
        scores = torch.baddbmm(alibi, q, k.transpose(1, 2), beta=1.0, alpha=1.0 / math.sqrt(self.hd))
        scores = scores.view(B, self.heads, S, S)
        blocked = torch.ones(S, S, dtype=torch.bool).triu(1)
        scores = torch.masked_fill(scores, blocked, torch.finfo(scores.dtype).min)
        probs = nn.functional.softmax(scores, dim=-1, dtype=torch.float32 if x.dtype != torch.float64
                                      else torch.float64).to(x.dtype)
        ctx = torch.bmm(probs.view(B * self.heads, S, S), v).view(B, self.heads, S, self.hd)
        ctx = ctx.permute(0, 2, 1, 3).reshape(B, S, D)
        return x + self.self_attention.dense(ctx)


class FalconAttention(nn.Module):
    """falcon/modeling_falcon.py (FalconAttention, its eager path without ALiBi): query_key_value
    split by _split_heads (new_decoder_architecture: view(B, S, kv_heads, heads / kv_heads + 2, hd),
    the queries then one key and one value per group, broadcast; multi_query: view(B, S, heads + 2,
    hd)), rotate_half RoPE on the whole head, scores /= sqrt(head_dim), the causal mask, softmax,
    dense. bias: config.bias on both."""

    def __init__(self, hidden, heads, kv_heads, layout, theta, bias):
        super().__init__()
        self.heads, self.hd, self.layout, self.theta = heads, hidden // heads, layout, theta
        self.kv = kv_heads if layout == "grouped" else 1
        self.query_key_value = nn.Linear(hidden, (heads + 2 * self.kv) * self.hd, bias=bias)
        self.dense = nn.Linear(hidden, hidden, bias=bias)

    def forward(self, x):
        B, S, _ = x.shape
        fused = self.query_key_value(x)
        if self.layout == "grouped":
            qkv = fused.view(B, S, -1, self.heads // self.kv + 2, self.hd)
            q, k, v = qkv[:, :, :, :-2], qkv[:, :, :, [-2]], qkv[:, :, :, [-1]]
            k, v = torch.broadcast_to(k, q.shape), torch.broadcast_to(v, q.shape)
            q, k, v = [t.flatten(2, 3) for t in (q, k, v)]
        else:
            qkv = fused.view(B, S, self.heads + 2, self.hd)
            q, k, v = qkv[..., :-2, :], qkv[..., [-2], :], qkv[..., [-1], :]
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        q, k = rope_apply(q, k, self.theta, self.hd, S, x.dtype)
        return self.dense(eager_scaled(q, k, v, self.heads, k.shape[1], None, 0, divide=True))


class GPTBigCodeAttention(nn.Module):
    """gpt_bigcode/modeling_gpt_bigcode.py (GPTBigCodeAttention, eager): c_attn an nn.Linear,
    multi_query: split (embed_dim, 2 * head_dim), the one key and value shared by every head;
    scores * head_dim ** -0.5 (scale_attn_weights), the causal mask (finfo.min), softmax in
    float32, c_proj."""

    def __init__(self, hidden, heads):
        super().__init__()
        self.heads, self.hd, self.d = heads, hidden // heads, hidden
        self.c_attn = nn.Linear(hidden, hidden + 2 * self.hd)
        self.c_proj = nn.Linear(hidden, hidden)

    def forward(self, x):
        B, S, _ = x.shape
        query, key_value = self.c_attn(x).split((self.d, 2 * self.hd), dim=2)
        key, value = key_value.split((self.hd, self.hd), dim=-1)
        q = query.view(B, S, self.heads, self.hd).transpose(1, 2)
        k, v = key[:, None], value[:, None]  # [B, 1, S, hd], broadcast over the heads
        w = torch.matmul(q, k.transpose(-1, -2)) * self.hd ** -0.5
        keep = torch.arange(S)[None] <= torch.arange(S)[:, None]
        w = torch.where(keep, w, torch.full((), finfo_min(w), dtype=w.dtype))
        w = nn.functional.softmax(w, dim=-1, dtype=torch.float32 if x.dtype != torch.float64
                                  else torch.float64).to(x.dtype)
        return self.c_proj(torch.matmul(w, v).transpose(1, 2).reshape(B, S, -1))


class EncoderAttention(nn.Module):
    """The q/k/v/out_proj attentions with every bias and scores * head_dim ** -0.5 (their
    eager_attention_forward), no positions inside:
      CLIPAttention      clip/modeling_clip.py (text tower: the causal mask; vision: none)
      SiglipAttention    siglip/modeling_siglip.py (no mask in either tower)
      Wav2Vec2Attention  wav2vec2/modeling_wav2vec2.py, HubertAttention hubert/modeling_hubert.py
                         (BART's attention, is_causal False)"""

    def __init__(self, hidden, heads, causal=False):
        super().__init__()
        self.heads, self.hd, self.causal = heads, hidden // heads, causal
        for n in ("k_proj", "v_proj", "q_proj", "out_proj"):
            setattr(self, n, nn.Linear(hidden, hidden))

    def forward(self, x):
        B, S, _ = x.shape
        split = lambda t: t.view(B, S, self.heads, self.hd).transpose(1, 2)  # noqa: E731
        q, k, v = split(self.q_proj(x)), split(self.k_proj(x)), split(self.v_proj(x))
        # CLIP's _create_4d_causal_attention_mask: finfo.min above the diagonal
        return self.out_proj(eager_scaled(q, k, v, self.heads, self.heads, self.hd ** -0.5, 0,
                                          causal=self.causal))


class DistilBertAttention(nn.Module):
    def __init__(self, dim, n_heads):
        super().__init__()
        self.n_heads, self.dim = n_heads, dim
        self.q_lin, self.k_lin = nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.v_lin, self.out_lin = nn.Linear(dim, dim), nn.Linear(dim, dim)

    def forward(self, x):
        bs = x.size(0)
        dim_per_head = self.dim // self.n_heads
        shape = lambda t: t.view(bs, -1, self.n_heads, dim_per_head).transpose(1, 2)  # noqa: E731
        q, k, v = shape(self.q_lin(x)), shape(self.k_lin(x)), shape(self.v_lin(x))
        q = q / math.sqrt(dim_per_head)  # before the matmul
        scores = torch.matmul(q, k.transpose(2, 3))
        weights = nn.functional.softmax(scores, dim=-1)
        ctx = torch.matmul(weights, v).transpose(1, 2).contiguous().view(bs, -1, self.n_heads *
                                                                         dim_per_head)
        return self.out_lin(ctx)


class GPT2Attention(nn.Module):
    def __init__(self, n_embd, n_head, n_positions):
        super().__init__()
        self.embed_dim, self.num_heads, self.head_dim = n_embd, n_head, n_embd // n_head
        self.register_buffer("bias", torch.tril(torch.ones(n_positions, n_positions)).view(
            1, 1, n_positions, n_positions))  # older checkpoints carry it (float, as saved)
        self.register_buffer("masked_bias", torch.tensor(-1e4))
        self.c_attn = Conv1D(3 * n_embd, n_embd)
        self.c_proj = Conv1D(n_embd, n_embd)

    def _split_heads(self, t):
        return t.view(t.size()[:-1] + (self.num_heads, self.head_dim)).permute(0, 2, 1, 3)

    def forward(self, hidden_states):
        query, key, value = self.c_attn(hidden_states).split(self.embed_dim, dim=2)
        query, key, value = map(self._split_heads, (query, key, value))
        w = torch.matmul(query, key.transpose(-1, -2))
        w = w / torch.full([], value.size(-1) ** 0.5, dtype=w.dtype)  # scale_attn_weights
        q_len, k_len = query.size(-2), key.size(-2)
        causal = self.bias[:, :, k_len - q_len:k_len, :k_len].bool()
        w = torch.where(causal, w, torch.full([], finfo_min(w), dtype=w.dtype))
        w = nn.functional.softmax(w, dim=-1).type(value.dtype)
        out = torch.matmul(w, value).permute(0, 2, 1, 3).contiguous()
        out = out.view(out.size()[:-2] + (self.embed_dim,))
        return self.c_proj(out)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rope_cos_sin(dim, base, seq, dtype, scaling=None):
    """inv_freq in float32 as HF's buffer (a rope_scaling's as modeling_rope_utils computes it:
    gen_rope_scaling_fixtures.hf_inv_freq, `scaling` = config.json's rope_scaling and
    max_position_embeddings); pos * inv_freq in float32; cos/sin times the attention factor in
    float32, cast to dtype (LlamaRotaryEmbedding.forward)."""
    factor = 1.0
    if scaling is None:
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    else:
        inv_freq, factor = hf_inv_freq(dict(scaling, rope_theta=base, dim=dim))
    freqs = torch.arange(seq).float()[:, None] * inv_freq[None]
    emb = torch.cat((freqs, freqs), dim=-1)
    if scaling is None:
        return emb.cos().to(dtype), emb.sin().to(dtype)
    return (emb.cos() * factor).to(dtype), (emb.sin() * factor).to(dtype)


def apply_partial_rope(q, k, cos, sin):
    rot = cos.shape[-1]
    q_rot, q_pass = q[..., :rot], q[..., rot:]
    k_rot, k_pass = k[..., :rot], k[..., rot:]
    q_embed = torch.cat([q_rot * cos + rotate_half(q_rot) * sin, q_pass], dim=-1)
    k_embed = torch.cat([k_rot * cos + rotate_half(k_rot) * sin, k_pass], dim=-1)
    return q_embed, k_embed


class GPTNeoXAttention(nn.Module):
    def __init__(self, hidden, heads, rotary_pct, base, max_pos):
        super().__init__()
        self.heads, self.hd = heads, hidden // heads
        self.rotary_ndims = int(self.hd * rotary_pct)
        self.base = base
        self.register_buffer("bias", torch.tril(torch.ones(max_pos, max_pos, dtype=torch.bool))
                             .view(1, 1, max_pos, max_pos))
        self.register_buffer("masked_bias", torch.tensor(-1e9))
        self.rotary_emb = nn.Module()
        self.rotary_emb.register_buffer("inv_freq", 1.0 / (base ** (
            torch.arange(0, self.rotary_ndims, 2).float() / self.rotary_ndims)))
        self.query_key_value = nn.Linear(hidden, 3 * hidden)
        self.dense = nn.Linear(hidden, hidden)

    def forward(self, x):
        B, S, E = x.shape
        qkv = self.query_key_value(x)
        qkv = qkv.view(B, S, self.heads, 3 * self.hd)  # per head: q | k | v
        q = qkv[..., : self.hd].permute(0, 2, 1, 3)
        k = qkv[..., self.hd: 2 * self.hd].permute(0, 2, 1, 3)
        v = qkv[..., 2 * self.hd:].permute(0, 2, 1, 3)
        cos, sin = rope_cos_sin(self.rotary_ndims, self.base, S, x.dtype)
        q, k = apply_partial_rope(q, k, cos, sin)
        norm_factor = math.sqrt(self.hd)
        scores = torch.zeros(B * self.heads, S, S, dtype=q.dtype)
        scores = torch.baddbmm(scores, q.reshape(-1, S, self.hd),
                               k.reshape(-1, S, self.hd).transpose(1, 2), beta=1.0,
                               alpha=1.0 / norm_factor).view(B, self.heads, S, S)
        causal = self.bias[:, :, :S, :S]
        scores = torch.where(causal, scores, torch.tensor(finfo_min(scores), dtype=scores.dtype))
        w = nn.functional.softmax(scores, dim=-1).to(v.dtype)
        out = torch.matmul(w, v).permute(0, 2, 1, 3).reshape(B, S, E)
        return self.dense(out)


def create_sinusoidal_positions(num_pos, dim):
    inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2, dtype=torch.int64) / dim))
    sinusoid_inp = torch.einsum("i , j -> i j", torch.arange(num_pos, dtype=torch.int64).float(),
                                inv_freq).float()
    return torch.cat((torch.sin(sinusoid_inp), torch.cos(sinusoid_inp)), dim=1)


def rotate_every_two(x):
    x1 = x[:, :, :, ::2]
    x2 = x[:, :, :, 1::2]
    x = torch.stack((-x2, x1), dim=-1)
    return x.flatten(-2)


def gptj_rotary(tensor, sin, cos):
    sin = torch.repeat_interleave(sin[:, :, None, :], 2, 3)
    cos = torch.repeat_interleave(cos[:, :, None, :], 2, 3)
    return (tensor * cos) + (rotate_every_two(tensor) * sin)


class GPTJAttention(nn.Module):
    """Its sin/cos table is a plain attribute built at construction (float32, not in the
    state_dict); _attn casts q and k to float32 in every dtype, as the module does."""

    def __init__(self, embed_dim, heads, rotary_dim, max_positions):
        super().__init__()
        self.num_attention_heads, self.head_dim = heads, embed_dim // heads
        self.scale_attn = torch.sqrt(torch.tensor(self.head_dim, dtype=torch.float32)).to(
            torch.get_default_dtype())
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.rotary_dim = rotary_dim
        self.embed_positions = create_sinusoidal_positions(max_positions, rotary_dim)

    def forward(self, x):
        B, S, E = x.shape
        H, hd = self.num_attention_heads, self.head_dim
        query = self.q_proj(x).view(B, S, H, hd)  # _split_heads(..., rotary=True): no permute
        key = self.k_proj(x).view(B, S, H, hd)
        value = self.v_proj(x).view(B, S, H, hd).permute(0, 2, 1, 3)
        position_ids = torch.arange(S)[None].expand(B, S)
        embed_positions = self.embed_positions.repeat(B, 1, 1)
        repeated = position_ids.unsqueeze(-1).repeat(1, 1, embed_positions.shape[-1])
        sincos = torch.gather(embed_positions, 1, repeated)
        sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)
        rd = self.rotary_dim
        k_rot = gptj_rotary(key[:, :, :, :rd], sin, cos)
        q_rot = gptj_rotary(query[:, :, :, :rd], sin, cos)
        key = torch.cat([k_rot, key[:, :, :, rd:]], dim=-1).permute(0, 2, 1, 3)
        query = torch.cat([q_rot, query[:, :, :, rd:]], dim=-1).permute(0, 2, 1, 3)
        query, key = query.to(torch.float32), key.to(torch.float32)  # _attn
        attn_weights = torch.matmul(query, key.transpose(-1, -2)) / self.scale_attn
        causal = torch.triu(torch.ones(S, S, dtype=torch.bool), diagonal=1)
        attn_weights = attn_weights + torch.zeros(S, S, dtype=attn_weights.dtype).masked_fill(
            causal, finfo_min(attn_weights))
        attn_weights = nn.functional.softmax(attn_weights, dim=-1).to(value.dtype)
        out = torch.matmul(attn_weights, value).permute(0, 2, 1, 3).contiguous().view(B, S, E)
        return self.out_proj(out)


def eager_attention(q, k, v, heads, kv_heads, window):
    """llama's eager_attention_forward with repeat_kv and masking_utils' causal (+ sliding
    window: kv_idx > q_idx - window) mask, finfo.min-filled; scaling head_dim ** -0.5."""
    return eager_scaled(q, k, v, heads, kv_heads, q.shape[-1] ** -0.5, window)


class Phi3Attention(nn.Module):
    def __init__(self, hidden, heads, kv_heads, partial_rotary_factor, rope_theta, window):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, hidden // heads
        self.rot = int(self.hd * partial_rotary_factor)
        self.theta, self.window = rope_theta, window
        op_size = heads * self.hd + 2 * (kv_heads * self.hd)
        self.o_proj = nn.Linear(heads * self.hd, hidden, bias=False)
        self.qkv_proj = nn.Linear(hidden, op_size, bias=False)

    def forward(self, x):
        B, S, _ = x.shape
        qkv = self.qkv_proj(x)
        query_pos = self.heads * self.hd
        q = qkv[..., :query_pos]
        k = qkv[..., query_pos: query_pos + self.kv_heads * self.hd]
        v = qkv[..., query_pos + self.kv_heads * self.hd:]
        q = q.view(B, S, -1, self.hd).transpose(1, 2)
        k = k.view(B, S, -1, self.hd).transpose(1, 2)
        v = v.view(B, S, -1, self.hd).transpose(1, 2)
        cos, sin = rope_cos_sin(self.rot, self.theta, S, x.dtype)
        q, k = apply_partial_rope(q, k, cos, sin)
        return self.o_proj(eager_attention(q, k, v, self.heads, self.kv_heads, self.window))


class LlamaAttention(nn.Module):
    def __init__(self, hidden, heads, kv_heads, rope_theta, window, bias=False, scaling=None):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, hidden // heads
        self.theta, self.window, self.scaling = rope_theta, window, scaling
        self.q_proj = nn.Linear(hidden, heads * self.hd, bias=bias)
        self.k_proj = nn.Linear(hidden, kv_heads * self.hd, bias=bias)
        self.v_proj = nn.Linear(hidden, kv_heads * self.hd, bias=bias)
        self.o_proj = nn.Linear(heads * self.hd, hidden, bias=False)

    def forward(self, x):
        B, S, _ = x.shape
        shape = lambda t: t.view(B, S, -1, self.hd).transpose(1, 2)  # noqa: E731
        q, k, v = shape(self.q_proj(x)), shape(self.k_proj(x)), shape(self.v_proj(x))
        cos, sin = rope_cos_sin(self.hd, self.theta, S, x.dtype, self.scaling)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        return self.o_proj(eager_attention(q, k, v, self.heads, self.kv_heads, self.window))


class DecoderAttention(nn.Module):
    """The Llama-lineage attentions that differ from LlamaAttention in their options only, each
    as its transformers file computes it:
      GraniteAttention     granite/modeling_granite.py @00aca815: scores * attention_multiplier
      Starcoder2Attention  starcoder2/modeling_starcoder2.py @00d4b3d2: q/k/v/o bias (use_bias),
                           sliding window
      OlmoAttention        olmo/modeling_olmo.py @38e888f5 (clip_qkv None: no clamp)
      StableLmAttention    stablelm/modeling_stablelm.py @00dcc6dd: q/k/v bias (use_qkv_bias),
                           o_proj without; partial rotary int(head_dim * partial_rotary_factor);
                           scores / sqrt(head_dim)
      PhiAttention         phi/modeling_phi.py @0faeaf39: q/k/v_proj and `dense`, all with bias;
                           partial rotary; q and k upcast to float32, scores / sqrt(head_dim)
      CohereAttention      cohere/modeling_cohere.py @015bfeb8: interleaved RoPE (freqs
                           repeat_interleave'd, rotate_half = stack(-x[1::2], x[::2]).flatten)
    rotary: rotated dims per head; scale: the scores' factor (None: head_dim ** -0.5); divide:
    scores / sqrt(head_dim) instead."""

    def __init__(self, hidden, heads, kv_heads, theta, rotary=None, qkv_bias=False, o_bias=False,
                 out="o_proj", scale=None, divide=False, window=0, interleaved=False):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, hidden // heads
        self.theta, self.rot, self.window = theta, rotary or self.hd, window
        self.scale, self.divide, self.interleaved, self.out = scale, divide, interleaved, out
        self.q_proj = nn.Linear(hidden, heads * self.hd, bias=qkv_bias)
        self.k_proj = nn.Linear(hidden, kv_heads * self.hd, bias=qkv_bias)
        self.v_proj = nn.Linear(hidden, kv_heads * self.hd, bias=qkv_bias)
        setattr(self, out, nn.Linear(heads * self.hd, hidden, bias=o_bias))

    def rotate(self, q, k, S, dtype):
        if not self.interleaved:
            cos, sin = rope_cos_sin(self.rot, self.theta, S, dtype)
            return apply_partial_rope(q, k, cos, sin)
        inv_freq = 1.0 / (self.theta ** (torch.arange(0, self.rot, 2, dtype=torch.int64).float()
                                         / self.rot))
        freqs = torch.arange(S).float()[:, None] * inv_freq[None]
        emb = torch.repeat_interleave(freqs, 2, dim=-1)
        cos, sin = emb.cos().to(dtype), emb.sin().to(dtype)

        def rotate_pairs(x):  # Cohere's rotate_half
            return torch.stack([-x[..., 1::2], x[..., ::2]], dim=-1).flatten(-2)
        return q * cos + rotate_pairs(q) * sin, k * cos + rotate_pairs(k) * sin

    def forward(self, x):
        B, S, _ = x.shape
        shape = lambda t: t.view(B, S, -1, self.hd).transpose(1, 2)  # noqa: E731
        q, k, v = shape(self.q_proj(x)), shape(self.k_proj(x)), shape(self.v_proj(x))
        q, k = self.rotate(q, k, S, x.dtype)
        ctx = eager_scaled(q, k, v, self.heads, self.kv_heads,
                           self.scale if self.scale is not None else self.hd ** -0.5, self.window,
                           divide=self.divide)
        return getattr(self, self.out)(ctx)


# --------------------------------------------------------------------------------------------------
# QK-norm families and decoupled head_dim

class RMSNorm(nn.Module):
    """Qwen3RMSNorm / Olmo2RMSNorm (= LlamaRMSNorm): x in float32 * rsqrt(mean(x^2) + eps), cast
    back, times weight (ones at init). unit_offset: Gemma3RMSNorm, times (1 + weight) in float32
    before the cast (zeros at init)."""

    def __init__(self, dim, eps, unit_offset=False):
        super().__init__()
        self.eps, self.unit_offset = eps, unit_offset
        self.weight = nn.Parameter(torch.zeros(dim) if unit_offset else torch.ones(dim))

    def forward(self, x):
        dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
        h = x.to(dtype)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        if self.unit_offset:
            return (h * (1.0 + self.weight.to(dtype))).type_as(x)
        return self.weight * h.to(x.dtype)


def rope_apply(q, k, theta, hd, S, dtype):
    cos, sin = rope_cos_sin(hd, theta, S, dtype)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def eager_scaled(q, k, v, heads, kv_heads, scaling, window, divide=False, softcap=None,
                 causal=True):
    """eager_attention_forward with an explicit `scaling` (Qwen3, Gemma 3, OLMo-2): repeat_kv,
    scores * scaling (divide: scores / sqrt(head_dim), as Phi, StableLM and Falcon write it),
    Gemma 2's softcap (/ cap, tanh, * cap), the causal (+ sliding window) mask finfo.min-filled,
    softmax in float32."""
    B, _, S, hd = q.shape
    n_rep = heads // kv_heads
    k = k[:, :, None].expand(B, kv_heads, n_rep, S, hd).reshape(B, heads, S, hd)
    v = v[:, :, None].expand(B, kv_heads, n_rep, S, hd).reshape(B, heads, S, hd)
    w = torch.matmul(q, k.transpose(2, 3))
    w = w / math.sqrt(hd) if divide else w * scaling
    if softcap is not None:
        w = torch.tanh(w / softcap) * softcap
    if causal:
        qi, ki = torch.arange(S)[:, None], torch.arange(S)[None]
        keep = ki <= qi
        if window:
            keep &= ki > qi - window
        w = w + torch.where(keep, torch.zeros((), dtype=w.dtype), torch.full((), finfo_min(w),
                                                                              dtype=w.dtype))
    w = nn.functional.softmax(w, dim=-1, dtype=torch.float32 if q.dtype != torch.float64 else
                              torch.float64).to(q.dtype)
    return torch.matmul(w, v).transpose(1, 2).contiguous().reshape(B, S, heads * hd)


class Gemma2Attention(nn.Module):
    """gemma2/modeling_gemma2.py (Gemma2Attention + its eager_attention_forward, the same from 4.44
    to 5.x):
    q/k/v/o_proj without bias, head_dim apart from hidden / heads, full-head rotate_half RoPE,
    scores * query_pre_attn_scalar ** -0.5, then softcap: scores / cap, tanh, * cap, then the
    causal mask (and on even layers the sliding window), softmax in float32."""

    def __init__(self, hidden, heads, kv_heads, head_dim, query_pre_attn_scalar, rope_theta,
                 softcap, window):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, head_dim
        self.theta, self.window, self.softcap = rope_theta, window, softcap
        self.scaling = query_pre_attn_scalar ** -0.5
        self.q_proj = nn.Linear(hidden, heads * head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, kv_heads * head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, kv_heads * head_dim, bias=False)
        self.o_proj = nn.Linear(heads * head_dim, hidden, bias=False)

    def forward(self, x):
        B, S, _ = x.shape
        shape = lambda t: t.view(B, S, -1, self.hd).transpose(1, 2)  # noqa: E731
        q, k, v = shape(self.q_proj(x)), shape(self.k_proj(x)), shape(self.v_proj(x))
        q, k = rope_apply(q, k, self.theta, self.hd, S, x.dtype)
        return self.o_proj(eager_scaled(q, k, v, self.heads, self.kv_heads, self.scaling,
                                        self.window, softcap=self.softcap))


class Qwen3Attention(nn.Module):
    def __init__(self, hidden, heads, kv_heads, head_dim, rope_theta, eps, window=0):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, head_dim
        self.theta, self.window, self.scaling = rope_theta, window, head_dim ** -0.5
        self.q_proj = nn.Linear(hidden, heads * head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, kv_heads * head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, kv_heads * head_dim, bias=False)
        self.o_proj = nn.Linear(heads * head_dim, hidden, bias=False)
        self.q_norm = RMSNorm(head_dim, eps)
        self.k_norm = RMSNorm(head_dim, eps)

    def forward(self, x):
        B, S, _ = x.shape
        shape = (B, S, -1, self.hd)
        q = self.q_norm(self.q_proj(x).view(shape)).transpose(1, 2)
        k = self.k_norm(self.k_proj(x).view(shape)).transpose(1, 2)
        v = self.v_proj(x).view(shape).transpose(1, 2)
        q, k = rope_apply(q, k, self.theta, self.hd, S, x.dtype)
        ctx = eager_scaled(q, k, v, self.heads, self.kv_heads, self.scaling, self.window)
        return self.o_proj(ctx)


class Gemma3Attention(nn.Module):
    """One layer: `rope_base` is rope_local_base_freq on a sliding layer, rope_theta on a full
    one; `window` the sliding window (0 on a full layer)."""

    def __init__(self, hidden, heads, kv_heads, head_dim, query_pre_attn_scalar, rope_base, eps,
                 window):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, head_dim
        self.base, self.window = rope_base, window
        self.scaling = query_pre_attn_scalar ** -0.5
        self.q_proj = nn.Linear(hidden, heads * head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, kv_heads * head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, kv_heads * head_dim, bias=False)
        self.o_proj = nn.Linear(heads * head_dim, hidden, bias=False)
        self.q_norm = RMSNorm(head_dim, eps, unit_offset=True)
        self.k_norm = RMSNorm(head_dim, eps, unit_offset=True)

    def forward(self, x):
        B, S, _ = x.shape
        shape = (B, S, -1, self.hd)
        q = self.q_norm(self.q_proj(x).view(shape).transpose(1, 2))
        k = self.k_norm(self.k_proj(x).view(shape).transpose(1, 2))
        v = self.v_proj(x).view(shape).transpose(1, 2)
        q, k = rope_apply(q, k, self.base, self.hd, S, x.dtype)
        ctx = eager_scaled(q, k, v, self.heads, self.kv_heads, self.scaling, self.window)
        return self.o_proj(ctx)


class Olmo2Attention(nn.Module):
    def __init__(self, hidden, heads, kv_heads, rope_theta, eps):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, hidden // heads
        self.theta, self.scaling = rope_theta, self.hd ** -0.5
        self.q_proj = nn.Linear(hidden, heads * self.hd, bias=False)
        self.k_proj = nn.Linear(hidden, kv_heads * self.hd, bias=False)
        self.v_proj = nn.Linear(hidden, kv_heads * self.hd, bias=False)
        self.o_proj = nn.Linear(heads * self.hd, hidden, bias=False)
        self.q_norm = RMSNorm(heads * self.hd, eps)
        self.k_norm = RMSNorm(kv_heads * self.hd, eps)

    def forward(self, x):
        B, S, _ = x.shape
        q, k = self.q_norm(self.q_proj(x)), self.k_norm(self.k_proj(x))
        v = self.v_proj(x)
        shape = (B, S, -1, self.hd)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
        q, k = rope_apply(q, k, self.theta, self.hd, S, x.dtype)
        return self.o_proj(eager_scaled(q, k, v, self.heads, self.kv_heads, self.scaling, 0))


# --------------------------------------------------------------------------------------------------
# T5

def relative_position_bucket(relative_position, bidirectional=True, num_buckets=32,
                             max_distance=128):
    """T5Attention._relative_position_bucket as written (float32 log, truncation by .to(long))."""
    relative_buckets = 0
    if bidirectional:
        num_buckets //= 2
        relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
    else:
        relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    relative_position_if_large = max_exact + (
        torch.log(relative_position.float() / max_exact)
        / math.log(max_distance / max_exact)
        * (num_buckets - max_exact)
    ).to(torch.long)
    relative_position_if_large = torch.min(
        relative_position_if_large, torch.full_like(relative_position_if_large, num_buckets - 1))
    relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
    return relative_buckets


class T5Attention(nn.Module):
    """q, k, v, o without bias, no score scaling; relative_attention_bias [buckets, H] only where
    has_relative_attention_bias (block 0). forward(x, position_bias=None) -> (out, position_bias):
    block 0 computes the bias (+ the causal mask as finfo.min for a decoder) and the later blocks
    of the stack reuse it, as T5Stack passes it on."""

    def __init__(self, d_model, d_kv, n_heads, is_decoder, has_relative_attention_bias,
                 num_buckets=32, max_distance=128):
        super().__init__()
        self.n_heads, self.d_kv, self.inner = n_heads, d_kv, n_heads * d_kv
        self.is_decoder, self.has_bias = is_decoder, has_relative_attention_bias
        self.num_buckets, self.max_distance = num_buckets, max_distance
        self.q = nn.Linear(d_model, self.inner, bias=False)
        self.k = nn.Linear(d_model, self.inner, bias=False)
        self.v = nn.Linear(d_model, self.inner, bias=False)
        self.o = nn.Linear(self.inner, d_model, bias=False)
        if has_relative_attention_bias:
            self.relative_attention_bias = nn.Embedding(num_buckets, n_heads)

    def compute_bias(self, query_length, key_length):
        context_position = torch.arange(query_length, dtype=torch.long)[:, None]
        memory_position = torch.arange(key_length, dtype=torch.long)[None, :]
        relative_position = memory_position - context_position  # (query_length, key_length)
        bucket = relative_position_bucket(relative_position, bidirectional=not self.is_decoder,
                                          num_buckets=self.num_buckets,
                                          max_distance=self.max_distance)
        values = self.relative_attention_bias(bucket)  # [q, k, H]
        return values.permute([2, 0, 1]).unsqueeze(0)  # [1, H, q, k]

    def position_bias(self, S, dtype):
        """compute_bias(S, S) in dtype, plus a decoder's extended causal mask (finfo.min)."""
        bias = self.compute_bias(S, S).to(dtype)
        if self.is_decoder:
            keep = torch.arange(S)[None] <= torch.arange(S)[:, None]
            bias = bias + torch.where(keep, torch.zeros((), dtype=dtype),
                                      torch.full((), torch.finfo(dtype).min, dtype=dtype))
        return bias

    def forward(self, x, position_bias=None):
        B, S, _ = x.shape
        shape = lambda t: t.view(B, -1, self.n_heads, self.d_kv).transpose(1, 2)  # noqa: E731
        q, k, v = shape(self.q(x)), shape(self.k(x)), shape(self.v(x))
        scores = torch.matmul(q, k.transpose(3, 2))
        if position_bias is None:
            position_bias = self.position_bias(S, scores.dtype)
        scores = scores + position_bias
        w = nn.functional.softmax(scores.float() if scores.dtype != torch.float64 else scores,
                                  dim=-1).type_as(scores)
        ctx = torch.matmul(w, v).transpose(1, 2).contiguous().view(B, -1, self.inner)
        return self.o(ctx), position_bias


class T5LayerNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight, self.variance_epsilon = nn.Parameter(torch.ones(d)), eps

    def forward(self, x):
        variance = x.to(torch.float32 if x.dtype != torch.float64 else x.dtype).pow(2).mean(
            -1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.variance_epsilon))


class T5LayerSelfAttention(nn.Module):
    """block.N.layer.0: x + SelfAttention(layer_norm(x)) (pre-RMSNorm, the residual inside)."""

    def __init__(self, d_model, d_kv, n_heads, is_decoder, has_bias, eps, buckets, max_distance):
        super().__init__()
        self.SelfAttention = T5Attention(d_model, d_kv, n_heads, is_decoder, has_bias, buckets,
                                         max_distance)
        self.layer_norm = T5LayerNorm(d_model, eps)

    def forward(self, x, position_bias=None):
        out, bias = self.SelfAttention(self.layer_norm(x), position_bias)
        return x + out, bias

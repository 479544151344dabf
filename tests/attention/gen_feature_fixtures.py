# SPDX-License-Identifier: Apache-2.0
"""Generate C++ fixtures for the layer's model-family features, in PyTorch: a head_dim independent
of d_model / heads, QK-norm (Qwen3 per head, Gemma 3's (1 + w) per head, OLMo-2 over the whole
projection), a score scale other than 1/sqrt(head_dim) (T5's 1, Gemma's query_pre_attn_scalar**-0.5)
and T5's bucketed relative position bias (encoder and decoder).

Each case is one `FeatureAttention` module written from the Hugging Face modules' math
(transformers' modeling_qwen3.py, modeling_gemma3.py, modular_olmo2.py, modeling_t5.py, eager
attention): q_proj / k_proj / v_proj [(heads | kv_heads) * head_dim, d_model], o_proj
[d_model, heads * head_dim]; then, in this order, the whole-projection QK-norm, the head split,
the per-head QK-norm, HF Llama RoPE (rotate_half), repeat_kv, scores (q k^T) * scaling,
+ T5's position bias, the causal mask, softmax, P V, o_proj. It is seeded
(torch.manual_seed(zlib.crc32(name))), default nn.Linear / nn.Embedding init, then every Linear
bias uniform(-0.5, 0.5), a Llama-style norm weight uniform(0.5, 1.5), a Gemma-style one (used as
1 + w) uniform(-0.5, 0.5). It runs in float32 (`out`, per-head `attn_weights`) and, as the truth,
a float64 copy (`out_f64`; T5's buckets stay HF's float32 computation in both).

Writes, from the repository root (deterministic; overwrites only tests/attention/feature_fixtures/):

    /usr/bin/python3 tests/attention/gen_feature_fixtures.py

    feature_fixtures/<name>.hpp          one `struct emha::feature_fixtures::<name>` per case
    feature_fixtures/relative_buckets.hpp  HF's _relative_position_bucket, run by torch, over a
                                         range of relative positions for several settings
    feature_fixtures/all.hpp             `all` (every case), `small` (the Cortex-M firmware's)

Every case struct has the same members. Self-attention, batch-first; key and value are the query.
Weights in emha's layout: in_proj_weight = q_proj | k_proj | v_proj rows, in_proj_bias the same
order, relative_attention_bias = T5's embedding weight [buckets, heads]. Absent arrays are null
pointers. Floats are exact hex-float literals.
"""
import copy
import math
import pathlib
import sys
import zlib

import numpy as np
import torch
from torch import nn

sys.dont_write_bytecode = True
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from gen_fixtures import array_member, double_literal, float_literal, wrap  # noqa: E402

OUT_DIR = pathlib.Path(__file__).resolve().parent / "feature_fixtures"
ARRAYS = ["in_proj_weight", "in_proj_bias", "out_proj_weight", "out_proj_bias", "q_norm_weight",
          "k_norm_weight", "relative_attention_bias", "query", "out", "attn_weights", "out_f64"]
POSITION = {"none": 0, "rope": 1, "relative_bias": 4}  # emha::Position's order
QK_NORM = {"none": 0, "per_head": 1, "whole": 2}      # emha::QkNorm's order


# --------------------------------------------------------------------------------------------------
# The Hugging Face pieces, as their modules compute them

class LlamaRMSNorm(nn.Module):
    """transformers' LlamaRMSNorm (= T5LayerNorm, Qwen3RMSNorm, Olmo2RMSNorm): x * rsqrt(mean(x^2)
    + eps), cast back to the input dtype, then * weight. HF upcasts to float32; the float64 truth
    stays float64."""
    def __init__(self, size, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.variance_epsilon = eps

    def forward(self, x):
        dtype = x.dtype
        h = x.to(torch.promote_types(dtype, torch.float32))
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * h.to(dtype)


class Gemma3RMSNorm(nn.Module):
    """transformers' Gemma3RMSNorm: (x * rsqrt(mean(x^2) + eps)) * (1 + weight), then cast; the
    weight starts at zero (here drawn around it)."""
    def __init__(self, size, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.zeros(size))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        wide = torch.promote_types(x.dtype, torch.float32)
        output = self._norm(x.to(wide))
        output = output * (1.0 + self.weight.to(wide))
        return output.type_as(x)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rope_cos_sin(seq, dim, base, dtype):
    """LlamaRotaryEmbedding (default type): inv_freq from an int64 arange, freqs = pos * inv_freq,
    emb = cat(freqs, freqs); float32 as HF, float64 for the truth."""
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(dtype) / dim))
    freqs = torch.arange(seq).to(dtype)[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    """transformers' T5Attention._relative_position_bucket, verbatim in its torch operations
    (float32 log whatever the module's dtype)."""
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


class FeatureAttention(nn.Module):
    """Self-attention with the family features; x [B, S, d_model]. scaling None: head_dim**-0.5."""
    def __init__(self, d_model, heads, kv_heads, head_dim, bias, causal, scaling=None,
                 position="none", rope_base=10000.0, qk_norm="none", qk_norm_eps=1e-6,
                 unit_offset=False, buckets=32, max_distance=128, bidirectional=True):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, head_dim
        self.causal, self.position, self.rope_base = causal, position, rope_base
        self.scaling = head_dim ** -0.5 if scaling is None else scaling
        self.qk_norm = qk_norm
        self.buckets, self.max_distance, self.bidirectional = buckets, max_distance, bidirectional
        self.q_proj = nn.Linear(d_model, heads * head_dim, bias=bias)
        self.k_proj = nn.Linear(d_model, kv_heads * head_dim, bias=bias)
        self.v_proj = nn.Linear(d_model, kv_heads * head_dim, bias=bias)
        self.o_proj = nn.Linear(heads * head_dim, d_model, bias=bias)
        norm = Gemma3RMSNorm if unit_offset else LlamaRMSNorm
        if qk_norm == "per_head":  # Qwen3 / Gemma 3: [head_dim]
            self.q_norm, self.k_norm = norm(head_dim, qk_norm_eps), norm(head_dim, qk_norm_eps)
        elif qk_norm == "whole":  # OLMo-2: [heads * head_dim], [kv_heads * head_dim]
            self.q_norm = norm(heads * head_dim, qk_norm_eps)
            self.k_norm = norm(kv_heads * head_dim, qk_norm_eps)
        if position == "relative_bias":  # T5: only the first block holds it
            self.relative_attention_bias = nn.Embedding(buckets, heads)

    def compute_bias(self, query_length, key_length):
        # T5Attention.compute_bias: [1, H, q, k]
        context_position = torch.arange(query_length, dtype=torch.long)[:, None]
        memory_position = torch.arange(key_length, dtype=torch.long)[None, :]
        relative_position = memory_position - context_position
        bucket = relative_position_bucket(relative_position, bidirectional=self.bidirectional,
                                          num_buckets=self.buckets, max_distance=self.max_distance)
        values = self.relative_attention_bias(bucket)
        return values.permute([2, 0, 1]).unsqueeze(0)

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        if self.qk_norm == "whole":  # OLMo-2: before the head split
            q, k = self.q_norm(q), self.k_norm(k)
        q = q.view(b, s, self.heads, self.head_dim)
        k = k.view(b, s, self.kv_heads, self.head_dim)
        v = v.view(b, s, self.kv_heads, self.head_dim)
        if self.qk_norm == "per_head":  # Qwen3: on the view, before the transpose and RoPE
            q, k = self.q_norm(q), self.k_norm(k)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        if self.position == "rope":
            cos, sin = rope_cos_sin(s, self.head_dim, self.rope_base, x.dtype)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
        group = self.heads // self.kv_heads  # repeat_kv: query head h reads K/V head h // group
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        scores = torch.matmul(q, k.transpose(2, 3)) * self.scaling
        if self.position == "relative_bias":
            scores = scores + self.compute_bias(s, s)
        if self.causal:
            blocked = torch.triu(torch.ones(s, s, dtype=torch.bool), diagonal=1)
            scores = scores.masked_fill(blocked, float("-inf"))
        p = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(p, v).transpose(1, 2).reshape(b, s, self.heads * self.head_dim)
        return self.o_proj(ctx), p


def randomize(m):
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, nn.Linear) and mod.bias is not None:
                mod.bias.uniform_(-0.5, 0.5)
            elif isinstance(mod, LlamaRMSNorm):
                mod.weight.uniform_(0.5, 1.5)
            elif isinstance(mod, Gemma3RMSNorm):
                mod.weight.uniform_(-0.5, 0.5)
    return m.eval()


def to_emha(m):
    # in_proj_weight = cat(q_proj.weight, k_proj.weight, v_proj.weight); in_proj_bias likewise
    # out_proj_* = o_proj.*; q/k_norm_weight = q_norm/k_norm.weight (Gemma: w of 1 + w)
    # relative_attention_bias = relative_attention_bias.weight [buckets, heads]
    has_bias = m.q_proj.bias is not None
    return dict(
        in_proj_weight=torch.cat([m.q_proj.weight, m.k_proj.weight, m.v_proj.weight]),
        in_proj_bias=torch.cat([m.q_proj.bias, m.k_proj.bias, m.v_proj.bias]) if has_bias else None,
        out_proj_weight=m.o_proj.weight, out_proj_bias=m.o_proj.bias,
        q_norm_weight=m.q_norm.weight if m.qk_norm != "none" else None,
        k_norm_weight=m.k_norm.weight if m.qk_norm != "none" else None,
        relative_attention_bias=(m.relative_attention_bias.weight
                                 if m.position == "relative_bias" else None))


# --------------------------------------------------------------------------------------------------
# The cases: (name, description, batch, seq, module arguments)

CASES = [
    ("head_dim_wide_gqa", "head_dim 16 over d_model 32 with 4 heads (Q 64 wide), GQA 4 on 2, "
     "biases, causal", 2, 8,
     dict(d_model=32, heads=4, kv_heads=2, head_dim=16, bias=True, causal=True)),
    ("head_dim_narrow_rope", "head_dim 4 over d_model 32 with 4 heads (Q 16 wide), GQA 4 on 2, "
     "no biases, HF RoPE rotate_half, causal", 2, 9,
     dict(d_model=32, heads=4, kv_heads=2, head_dim=4, bias=False, causal=True, position="rope")),
    ("head_dim_wide_bidirectional", "head_dim 12 over d_model 24 with 3 heads, biases, no mask",
     1, 6, dict(d_model=24, heads=3, kv_heads=3, head_dim=12, bias=True, causal=False)),
    ("qk_norm_qwen3", "Qwen3: per-head RMSNorm x_hat * w (eps 1e-5) on Q and K after the "
     "projection and its bias, then RoPE (base 1e6), head_dim 12, GQA 4 on 2, causal", 2, 10,
     dict(d_model=32, heads=4, kv_heads=2, head_dim=12, bias=True, causal=True, position="rope",
          rope_base=1e6, qk_norm="per_head", qk_norm_eps=1e-5)),
    ("qk_norm_gemma", "Gemma 3: per-head RMSNorm x_hat * (1 + w) (eps 0.05), RoPE, scale "
     "query_pre_attn_scalar**-0.5 with query_pre_attn_scalar 24 != head_dim 8, MQA, causal", 2, 8,
     dict(d_model=32, heads=4, kv_heads=1, head_dim=8, bias=False, causal=True, position="rope",
          scaling=24 ** -0.5, qk_norm="per_head", qk_norm_eps=0.05, unit_offset=True)),
    ("qk_norm_olmo2", "OLMo-2: RMSNorm x_hat * w (eps 0.01) over the whole Q [64] and K [32] "
     "rows before the head split, then RoPE (base 500000), head_dim 16, GQA 4 on 2, causal", 2, 8,
     dict(d_model=32, heads=4, kv_heads=2, head_dim=16, bias=False, causal=True, position="rope",
          rope_base=500000.0, qk_norm="whole", qk_norm_eps=0.01)),
    ("t5_encoder", "T5 encoder self-attention: relative bias (16 buckets, max_distance 12, "
     "bidirectional), scale 1, no biases, d_kv 6 over d_model 32 with 4 heads, no mask", 1, 20,
     dict(d_model=32, heads=4, kv_heads=4, head_dim=6, bias=False, causal=False, scaling=1.0,
          position="relative_bias", buckets=16, max_distance=12, bidirectional=True)),
    ("t5_decoder", "T5 decoder self-attention: relative bias (8 buckets, max_distance 12, "
     "unidirectional), causal, scale 1, no biases, d_kv 6 over d_model 32 with 4 heads", 2, 16,
     dict(d_model=32, heads=4, kv_heads=4, head_dim=6, bias=False, causal=True, scaling=1.0,
          position="relative_bias", buckets=8, max_distance=12, bidirectional=False)),
    ("relative_bias_gqa", "T5's relative bias (8 buckets, max_distance 6, unidirectional) on "
     "GQA 4 on 2, head_dim 8 over d_model 16, biases, scale 1, causal", 2, 12,
     dict(d_model=16, heads=4, kv_heads=2, head_dim=8, bias=True, causal=True, scaling=1.0,
          position="relative_bias", buckets=8, max_distance=6, bidirectional=False)),
]
# The Cortex-M firmware's cases (its RAM holds the largest one's outputs).
SMALL = ["head_dim_narrow_rope", "qk_norm_qwen3", "qk_norm_gemma", "qk_norm_olmo2",
         "relative_bias_gqa"]

# Bucket tables: (buckets, max_distance, bidirectional, largest |relative position|): the
# fixtures' settings, T5's 32 / 128, and settings where torch's float32 log gives another bucket
# than the same formula in double (10 / 160 at distances 10, 20, 80; 48 / 81 at 36, 54).
BUCKET_TABLES = [(8, 12, False, 24), (8, 12, True, 24), (16, 12, False, 24), (16, 12, True, 24),
                 (8, 6, False, 24), (32, 128, True, 600), (32, 128, False, 600),
                 (10, 160, False, 170), (20, 160, True, 170), (48, 81, False, 90)]


def run_case(name, description, batch, seq, args):
    torch.manual_seed(zlib.crc32(name.encode()))
    m = randomize(FeatureAttention(**args))
    x = torch.randn(batch, seq, args["d_model"])
    with torch.no_grad():
        out, p = m(x)
        out64, _ = copy.deepcopy(m).double()(x.double())
    meta = dict(description=description, batch=batch, seq=seq, **args)
    arrays = dict(to_emha(m), query=x, out=out, attn_weights=p, out_f64=out64)
    return meta, {k: (None if v is None else v.detach().contiguous().numpy()) for k, v in arrays.items()}


def check(name, meta, arrays):
    d, h, kv, hd = meta["d_model"], meta["heads"], meta["kv_heads"], meta["head_dim"]
    b, s = meta["batch"], meta["seq"]
    expect = dict(in_proj_weight=((h + 2 * kv) * hd, d), out_proj_weight=(d, h * hd),
                  query=(b, s, d), out=(b, s, d), out_f64=(b, s, d), attn_weights=(b, h, s, s))
    for k, shape in expect.items():
        assert arrays[k].shape == shape, (name, k, arrays[k].shape, shape)
    for k in ("out", "attn_weights", "out_f64"):
        assert np.isfinite(arrays[k]).all(), (name, k)
    assert arrays["out_f64"].dtype == np.float64
    if meta.get("position") == "relative_bias":  # exact, logarithmic and saturated buckets all met
        half = meta["buckets"] // 2 if meta["bidirectional"] else meta["buckets"]
        distances = range(s)  # |key - query| over the sequence
        assert min(distances) < half // 2 <= meta["max_distance"] <= max(distances), name
        rel = torch.arange(-(s - 1), s)
        got = relative_position_bucket(rel, meta["bidirectional"], meta["buckets"], meta["max_distance"])
        assert int(got.max()) == meta["buckets"] - 1, name  # the last bucket is used


def render_case(name, meta, arrays):
    b = lambda v: "true" if v else "false"  # noqa: E731
    m = meta
    scale = 0.0 if m.get("scaling") is None else m["scaling"]
    lines = [
        f"// Generated by tests/attention/gen_feature_fixtures.py (torch {torch.__version__}). "
        "Do not edit.",
        "#pragma once", "#include <cstddef>",
        "namespace emha::feature_fixtures {", f"struct {name} {{",
        f'  static constexpr const char* name = "{name}";',
        f'  static constexpr const char* module = "{m["description"]}";',
        f"  static constexpr std::size_t d_model = {m['d_model']}, heads = {m['heads']}, "
        f"kv_heads = {m['kv_heads']}, head_dim = {m['head_dim']};",
        f"  static constexpr std::size_t seq_q = {m['seq']}, seq_kv = {m['seq']}, "
        f"batch = {m['batch']};  // self-attention",
        "  static constexpr bool batch_first = true;  // query, out: [B, S, d_model]",
        f"  static constexpr bool causal = {b(m['causal'])};",
        f"  static constexpr bool bias = {b(m['bias'])};  // q, k, v and o projections",
        f"  static constexpr float scale = {float_literal(scale)};  "
        "// 0.0f: 1/sqrt(head_dim); else the module's scaling",
        f"  static constexpr double scale_f64 = {double_literal(scale)};  "
        "// the module's scaling in double (the truth's)",
        f"  static constexpr int position = {POSITION[m.get('position', 'none')]};  "
        "// 0 none, 1 rope, 4 relative_bias",
        f"  static constexpr float rope_base = {float_literal(m.get('rope_base', 10000.0))};",
        f"  static constexpr int qk_norm = {QK_NORM[m.get('qk_norm', 'none')]};  "
        "// 0 none, 1 per_head, 2 whole",
        f"  static constexpr float qk_norm_eps = {float_literal(m.get('qk_norm_eps', 1e-6))};",
        f"  static constexpr bool qk_norm_unit_offset = {b(m.get('unit_offset', False))};  "
        "// x_hat * (1 + w)",
        f"  static constexpr std::size_t relative_buckets = {m.get('buckets', 32)}, "
        f"relative_max_distance = {m.get('max_distance', 128)};",
        f"  static constexpr bool relative_bidirectional = {b(m.get('bidirectional', True))};",
        "  static constexpr bool average_attn_weights = false;  // attn_weights [B, H, S, S]",
    ]
    for member, arr in arrays.items():
        lines += array_member(member, arr, set())
    lines += ["};", "}  // namespace emha::feature_fixtures", ""]
    return "\n".join(lines)


def render_buckets():
    lines = [
        "// Generated by tests/attention/gen_feature_fixtures.py "
        f"(torch {torch.__version__}). Do not edit.",
        "#pragma once", "#include <cstddef>",
        "namespace emha::feature_fixtures {",
        "// transformers' T5Attention._relative_position_bucket run by torch (its float32 log) on",
        "// relative positions (key - query) first .. -first: bucket[i] is position first + i's.",
    ]
    names = []
    for buckets, max_distance, bidirectional, reach in BUCKET_TABLES:
        rel = torch.arange(-reach, reach + 1, dtype=torch.long)
        got = relative_position_bucket(rel, bidirectional, buckets, max_distance).numpy()
        assert got.min() >= 0 and got.max() < buckets
        name = f"buckets_{buckets}_{max_distance}_{'bidirectional' if bidirectional else 'causal'}"
        names.append(name)
        lines += [f"struct {name} {{",
                  f"  static constexpr std::size_t buckets = {buckets}, max_distance = {max_distance};",
                  f"  static constexpr bool bidirectional = {'true' if bidirectional else 'false'};",
                  f"  static constexpr long first = {-reach};",
                  f"  static constexpr unsigned char bucket[] = {{  // {2 * reach + 1}"]
        lines += wrap([f"{int(v)}," for v in got], "    ") + ["  };", "};"]
    lines += ["}  // namespace emha::feature_fixtures", ""]
    return "\n".join(lines), names


def render_all(names, small, tables):
    tuple_of = lambda alias, ns: [f"using {alias} = std::tuple<"] + wrap(  # noqa: E731
        [n + "," for n in ns[:-1]] + [ns[-1] + ">;"], "    ")
    return "\n".join([
        "// Generated by tests/attention/gen_feature_fixtures.py. Do not edit.",
        "#pragma once", "#include <tuple>", '#include "relative_buckets.hpp"',
        *[f'#include "{n}.hpp"' for n in names],
        "namespace emha::feature_fixtures {",
        *tuple_of("all", names),
        "// the Cortex-M firmware's",
        *tuple_of("small", small),
        *tuple_of("bucket_tables", tables),
        "}  // namespace emha::feature_fixtures", ""])


def main():
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    print(f"{'name':28s} {'elements':>8s}  max |torch f32 - f64|  max |f64|")
    for name, description, batch, seq, args in CASES:
        meta, arrays = run_case(name, description, batch, seq, args)
        check(name, meta, arrays)
        (OUT_DIR / f"{name}.hpp").write_text(render_case(name, meta, arrays))
        count = sum(a.size for n, a in arrays.items() if a is not None and n != "out_f64")
        err = float(np.abs(arrays["out"].astype(np.float64) - arrays["out_f64"]).max())
        print(f"{name:28s} {count:8d}  {err:.3e}             {np.abs(arrays['out_f64']).max():.3f}")
    text, tables = render_buckets()
    (OUT_DIR / "relative_buckets.hpp").write_text(text)
    assert set(SMALL) <= {n for n, *_ in CASES}
    (OUT_DIR / "all.hpp").write_text(render_all([n for n, *_ in CASES], SMALL, tables))


if __name__ == "__main__":
    main()

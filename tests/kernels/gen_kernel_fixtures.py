# SPDX-License-Identifier: Apache-2.0
"""Generate C++ fixtures for emha's normalization and RoPE kernels from PyTorch.

Each case runs the PyTorch code a user's model runs (torch.nn.LayerNorm; Hugging Face's
LlamaRMSNorm and rotary embedding, re-implemented here from transformers' modeling_llama.py;
torchscale's xPos from component/xpos_relative_position.py: neither is a Debian package; ALiBi's
slopes from the paper's reference code) in float32, and the same math in float64 as the truth, and
writes tests/kernels/fixtures/kernels.hpp: one `struct emha::kernel_fixtures::<name>` per case
with the inputs, torch's float32 output `out` and the float64 truth `out_f64`.

    /usr/bin/python3 tests/kernels/gen_kernel_fixtures.py      (from the repository root)

Deterministic; overwrites only tests/kernels/fixtures/kernels.hpp.
"""
import math
import pathlib
import sys

import numpy as np
import torch

sys.dont_write_bytecode = True
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "attention"))
from gen_fixtures import double_literal, float_literal, wrap  # noqa: E402

OUT = pathlib.Path(__file__).resolve().parent / "fixtures" / "kernels.hpp"


def array(name, arr, ctype="float"):
    fmt = double_literal if ctype == "double" else float_literal
    arr = np.asarray(arr)
    return ([f"  static constexpr {ctype} {name}[] = {{  // {list(arr.shape)}"]
            + wrap([fmt(v) + "," for v in arr.reshape(-1)], "    ") + ["  };"])


def layer_norm(name, rows, n, affine, eps, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, n, generator=g) * 3 + 1.5
    ln = torch.nn.LayerNorm(n, eps=eps, elementwise_affine=affine)
    if affine:
        with torch.no_grad():
            ln.weight.copy_(torch.rand(n, generator=g) + 0.5)
            ln.bias.copy_(torch.rand(n, generator=g) - 0.5)
    with torch.no_grad():
        out = ln(x)
        out64 = ln.double()(x.double())
    lines = [f"struct {name} {{", f"  static constexpr std::size_t rows = {rows}, n = {n};",
             f"  static constexpr float eps = {float_literal(eps)};",
             f"  static constexpr bool affine = {'true' if affine else 'false'};"]
    lines += array("x", x.numpy())
    if affine:
        lines += array("gamma", ln.weight.detach().float().numpy())
        lines += array("beta", ln.bias.detach().float().numpy())
    else:
        lines += ["  static constexpr const float* gamma = nullptr;",
                  "  static constexpr const float* beta = nullptr;"]
    lines += array("out", out.numpy()) + array("out_f64", out64.numpy(), "double")
    return lines + ["};", ""]


def llama_rms_norm(x, weight, eps):
    # transformers' LlamaRMSNorm.forward
    variance = x.pow(2).mean(-1, keepdim=True)
    x = x * torch.rsqrt(variance + eps)
    return weight * x


def rms_norm(name, rows, n, eps, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, n, generator=g) * 2 - 0.5
    w = torch.rand(n, generator=g) + 0.5
    out = llama_rms_norm(x, w, eps)
    out64 = llama_rms_norm(x.double(), w.double(), eps)
    lines = [f"struct {name} {{", f"  static constexpr std::size_t rows = {rows}, n = {n};",
             f"  static constexpr float eps = {float_literal(eps)};"]
    lines += array("x", x.numpy()) + array("gamma", w.numpy())
    lines += array("out", out.numpy()) + array("out_f64", out64.numpy(), "double")
    return lines + ["};", ""]


def rope_angles(d_rot, base, positions, dtype):
    # transformers' LlamaRotaryEmbedding (default rope type): float32 inv_freq, one product
    inv_freq = 1.0 / (base ** (torch.arange(0, d_rot, 2, dtype=torch.int64).to(dtype) / d_rot))
    freqs = positions.to(dtype)[:, None] * inv_freq[None, :]
    return freqs.cos(), freqs.sin()


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rotate_every_two(x):  # GPT-J, torchscale
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def apply_rope(x, cos, sin, d_rot, pairing):
    # x: [rows, heads, head_dim]; cos/sin: [rows, d_rot/2]; dims past d_rot pass through
    rot, rest = x[..., :d_rot], x[..., d_rot:]
    if pairing == "half":
        c = torch.cat((cos, cos), -1)[:, None, :]
        s = torch.cat((sin, sin), -1)[:, None, :]
        rot = rot * c + rotate_half(rot) * s
    else:
        c = cos.repeat_interleave(2, -1)[:, None, :]
        s = sin.repeat_interleave(2, -1)[:, None, :]
        rot = rot * c + rotate_every_two(rot) * s
    return torch.cat((rot, rest), -1)


def rope(name, rows, heads, head_dim, d_rot, base, pos0, pairing, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, heads, head_dim, generator=g)
    pos = torch.arange(pos0, pos0 + rows)
    out = apply_rope(x, *rope_angles(d_rot, base, pos, torch.float32), d_rot, pairing)
    out64 = apply_rope(x.double(), *rope_angles(d_rot, base, pos, torch.float64), d_rot, pairing)
    lines = [f"struct {name} {{",
             f"  static constexpr std::size_t rows = {rows}, heads = {heads}, head_dim = {head_dim};",
             f"  static constexpr std::size_t d_rot = {d_rot}, pos0 = {pos0};",
             f"  static constexpr float base = {float_literal(base)};",
             f"  static constexpr RopePairing pairing = RopePairing::{pairing};"]
    lines += array("x", x.numpy())
    lines += array("out", out.numpy()) + array("out_f64", out64.numpy(), "double")
    return lines + ["};", ""]


# torchscale's component/xpos_relative_position.py, re-implemented (torchscale is not packaged):
# the same torch expressions in the same order.
def fixed_pos_embedding(x):
    seq_len, dim = x.shape
    inv_freq = 1.0 / (10000 ** (torch.arange(0, dim) / dim))
    sinusoid_inp = torch.einsum("i , j -> i j", torch.arange(0, seq_len, dtype=torch.float), inv_freq).to(x)
    return torch.sin(sinusoid_inp), torch.cos(sinusoid_inp)


def duplicate_interleave(m):
    dim0 = m.shape[0]
    return m.view(-1, 1).repeat(1, 2).view(dim0, -1)


def apply_rotary_pos_emb(x, sin, cos, scale=1):
    sin, cos = map(lambda t: duplicate_interleave(t * scale), (sin, cos))
    return (x * cos) + (rotate_every_two(x) * sin)


def xpos_forward(x, head_dim, offset, downscale, scale_base=512):
    scale_buf = (torch.arange(0, head_dim, 2) + 0.4 * head_dim) / (1.4 * head_dim)
    length = x.shape[1]
    min_pos = -(length + offset) // 2
    max_pos = length + offset + min_pos
    scale = scale_buf ** torch.arange(min_pos, max_pos, 1).to(scale_buf).div(scale_base)[:, None]
    sin, cos = fixed_pos_embedding(scale)
    if scale.shape[0] > length:
        scale, sin, cos = scale[-length:], sin[-length:], cos[-length:]
    if downscale:
        scale = 1 / scale
    return apply_rotary_pos_emb(x, sin, cos, scale)


def xpos(name, rows, heads, head_dim, offset, downscale, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(heads, rows, head_dim, generator=g)  # torchscale's [(B H), L, Dh]
    out = xpos_forward(x, head_dim, offset, downscale)
    torch.set_default_dtype(torch.float64)  # the truth: every tensor the module makes in float64
    out64 = xpos_forward(x.double(), head_dim, offset, downscale)
    torch.set_default_dtype(torch.float32)
    t = lambda a: a.transpose(0, 1).contiguous().numpy()  # noqa: E731  -> emha's [L, H, Dh] rows
    lines = [f"struct {name} {{",
             f"  static constexpr std::size_t rows = {rows}, heads = {heads}, head_dim = {head_dim};",
             f"  static constexpr std::size_t n_total = {rows + offset};",
             f"  static constexpr bool downscale = {'true' if downscale else 'false'};"]
    lines += array("x", t(x)) + array("out", t(out)) + array("out_f64", t(out64), "double")
    return lines + ["};", ""]


# ALiBi's slopes as the paper's reference code computes them (ofirpress/attention_with_linear_biases,
# models/transformer.py get_slopes), in Python floats, then a float32 tensor.
def get_slopes(n):
    def get_slopes_power_of_2(n):
        start = (2**(-2**-(math.log2(n) - 3)))
        ratio = start
        return [start * ratio**i for i in range(n)]
    if math.log2(n).is_integer():
        return get_slopes_power_of_2(n)
    closest_power_of_2 = 2**math.floor(math.log2(n))
    return (get_slopes_power_of_2(closest_power_of_2)
            + get_slopes(2 * closest_power_of_2)[0::2][:n - closest_power_of_2])


ALIBI_HEADS = list(range(1, 17)) + [24, 32]


def alibi():
    slopes = np.concatenate([torch.tensor(get_slopes(n), dtype=torch.float32).numpy() for n in ALIBI_HEADS])
    lines = ["struct alibi {",
             f"  static constexpr std::size_t heads[] = {{{', '.join(str(n) for n in ALIBI_HEADS)}}};"]
    lines += array("slopes", slopes)  # every count's slopes, one count after another
    return lines + ["};", ""]


# The blog encoder block's positional encoding (seed 1): a Python loop over math.sin and
# math.cos of pos / 10000 ** (2i / d), stored into a float32 tensor; and the PyTorch tutorial's
# float32 formula (pytorch/examples word_language_model PositionalEncoding) for comparison.
def blog_sinusoidal(positions, d):
    """The blog's table [positions, d]: math.sin/math.cos in a Python loop, stored as float32."""
    pe = torch.zeros(positions, d)
    for pos in range(positions):
        for i in range(0, d, 2):
            angle = pos / (10000 ** (i / d))
            pe[pos, i] = math.sin(angle)
            pe[pos, i + 1] = math.cos(angle)
    return pe


def sinusoidal(positions, d):
    pe = blog_sinusoidal(positions, d)
    position = torch.arange(0, positions, dtype=torch.float).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d, 2).float() * (-math.log(10000.0) / d))
    tutorial = torch.zeros(positions, d)
    tutorial[:, 0::2] = torch.sin(position * div_term)
    tutorial[:, 1::2] = torch.cos(position * div_term)
    lines = ["struct sinusoidal {", f"  static constexpr std::size_t positions = {positions}, d = {d};"]
    lines += array("pe", pe.numpy()) + array("tutorial", tutorial.numpy())
    return lines + ["};", ""]


def main():
    cases = [
        ("ln_affine", layer_norm("ln_affine", 5, 37, True, 1e-5, 1)),
        ("ln_plain", layer_norm("ln_plain", 3, 256, False, 1e-6, 2)),
        ("ln_wide", layer_norm("ln_wide", 2, 1024, True, 1e-5, 3)),
        ("rms_llama", rms_norm("rms_llama", 4, 67, 1e-6, 4)),
        ("rms_wide", rms_norm("rms_wide", 2, 512, 1e-5, 5)),
        ("rope_half", rope("rope_half", 6, 3, 16, 16, 10000.0, 0, "half", 6)),
        ("rope_half_partial", rope("rope_half_partial", 5, 2, 40, 24, 10000.0, 7, "half", 7)),
        ("rope_interleaved", rope("rope_interleaved", 5, 2, 32, 32, 500000.0, 3, "interleaved", 8)),
        ("rope_interleaved_partial",
         rope("rope_interleaved_partial", 4, 2, 20, 12, 10000.0, 11, "interleaved", 9)),
        ("rope_long", rope("rope_long", 3, 2, 64, 64, 10000.0, 4093, "half", 10)),
        ("xpos_query", xpos("xpos_query", 6, 3, 16, 0, False, 11)),
        ("xpos_key", xpos("xpos_key", 7, 2, 32, 0, True, 12)),
        ("xpos_decode_query", xpos("xpos_decode_query", 1, 4, 16, 8, False, 13)),
        ("xpos_long_key", xpos("xpos_long_key", 3, 2, 64, 1500, True, 14)),
        ("alibi", alibi()),
        ("sinusoidal", sinusoidal(64, 20)),
    ]
    text = ["// Generated by tests/kernels/gen_kernel_fixtures.py from PyTorch " + torch.__version__ + ": do not edit.",
            "#pragma once", "#include <cstddef>", "#include <tuple>", "", "#include \"emha/kernels/rope.hpp\"", "",
            "namespace emha::kernel_fixtures {", "using emha::RopePairing;", ""]
    for _, lines in cases:
        text += lines
    ln = [n for n, _ in cases if n.startswith("ln_")]
    rms = [n for n, _ in cases if n.startswith("rms_")]
    rp = [n for n, _ in cases if n.startswith("rope_")]
    xp = [n for n, _ in cases if n.startswith("xpos_")]
    text += [f"using layer_norms = std::tuple<{', '.join(ln)}>;",
             f"using rms_norms = std::tuple<{', '.join(rms)}>;",
             f"using ropes = std::tuple<{', '.join(rp)}>;",
             f"using xposes = std::tuple<{', '.join(xp)}>;", "", "}  // namespace emha::kernel_fixtures", ""]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(text))


if __name__ == "__main__":
    main()

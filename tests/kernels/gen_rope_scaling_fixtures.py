# SPDX-License-Identifier: Apache-2.0
"""Generate tests/kernels/fixtures/rope_scaling.hpp: Hugging Face's RoPE scalings as transformers
computes them, for emha's rope_inv_freq_f32 and rope_table_scaled_f32.

`hf_inv_freq` re-implements transformers' _compute_{default,linear_scaling,dynamic_ntk,yarn,
longrope,llama3}_parameters (huggingface/transformers src/transformers/modeling_rope_utils.py
in its transformers 5 form: standardize_rope_params, yarn's `truncate`, `mscale`, `mscale_all_dim`
and `original_max_position_embeddings`, longrope's short factor up to the original length; the
other types as @ef468064) line for line in torch float32, the angles as
LlamaRotaryEmbedding.forward makes them (inv_freq @ positions in float32, cos and sin times
attention_scaling). `f64_inv_freq` is the same formulas in float64 (numpy), the truth emha's
float32 error is measured against. Each case is a model's config.json rope_scaling (Llama 3.1,
Llama 3.2, Qwen2.5's yarn, a yarn with truncate false as gpt-oss sets it, Phi-3's longrope, a
linear and a dynamic one); `positions` rows of cos and sin are written.

    /usr/bin/python3 tests/kernels/gen_rope_scaling_fixtures.py      (from the repository root)

Deterministic; overwrites only tests/kernels/fixtures/rope_scaling.hpp.
"""
import math
import pathlib
import sys

import numpy as np
import torch

sys.dont_write_bytecode = True
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "attention"))
from gen_fixtures import double_literal, float_literal, wrap  # noqa: E402

OUT = pathlib.Path(__file__).resolve().parent / "fixtures" / "rope_scaling.hpp"


def hf_inv_freq(c):
    """(inv_freq float32 [dim/2], attention_factor) as transformers computes them."""
    base, dim, s = c["rope_theta"], c["dim"], c["rope_scaling"]
    kind = s["rope_type"]
    default = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    if kind == "linear":
        inv = default.clone()
        inv /= s["factor"]
        return inv, 1.0
    if kind == "dynamic":  # seq_len = max_position_embeddings (init, and every length up to it)
        L = c["max_position_embeddings"]
        factor = s["factor"]
        b = base * ((factor * L / L) - (factor - 1)) ** (dim / (dim - 2))
        return 1.0 / (b ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim)), 1.0
    if kind == "yarn":
        factor = s["factor"]
        attention_factor, mscale, mscale_all_dim = (s.get(k) for k in ("attention_factor", "mscale",
                                                                        "mscale_all_dim"))
        if "original_max_position_embeddings" in s:
            original = s["original_max_position_embeddings"]
            factor = c["max_position_embeddings"] / original
        else:
            original = c["max_position_embeddings"]

        def get_mscale(scale, mscale=1):
            return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0

        if attention_factor is None:
            attention_factor = float(get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim)) \
                if mscale and mscale_all_dim else get_mscale(factor)
        beta_fast, beta_slow = s.get("beta_fast") or 32, s.get("beta_slow") or 1

        def find_correction_dim(num_rotations):
            return (dim * math.log(original / (num_rotations * 2 * math.pi))) / (2 * math.log(base))

        low, high = find_correction_dim(beta_fast), find_correction_dim(beta_slow)
        if s.get("truncate", True):
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, dim - 1)
        if low == high:
            high += 0.001
        ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
        pos_freqs = base ** (torch.arange(0, dim, 2).float() / dim)
        extrapolation, interpolation = 1.0 / pos_freqs, 1.0 / (factor * pos_freqs)
        ext_factor = 1 - ramp
        return interpolation * (1 - ext_factor) + extrapolation * ext_factor, attention_factor
    if kind == "longrope":
        factor, attention_factor = s.get("factor"), s.get("attention_factor")
        original = c.get("original_max_position_embeddings")
        if original:
            factor = c["max_position_embeddings"] / original
        else:
            original = c["max_position_embeddings"]
        if attention_factor is None:
            attention_factor = 1.0 if factor <= 1.0 else \
                math.sqrt(1 + math.log(factor) / math.log(original))
        ext = torch.tensor(s["short_factor"], dtype=torch.float32)  # every length up to original
        shape = torch.arange(0, dim, 2, dtype=torch.int64).float() / dim
        return 1.0 / (ext * base ** shape), attention_factor
    if kind == "llama3":
        factor, low_f, high_f = s["factor"], s["low_freq_factor"], s["high_freq_factor"]
        old = s["original_max_position_embeddings"]
        low_wavelen, high_wavelen = old / low_f, old / high_f
        wavelen = 2 * math.pi / default
        inv = torch.where(wavelen > low_wavelen, default / factor, default)
        smooth = (old / wavelen - low_f) / (high_f - low_f)
        smoothed = (1 - smooth) * inv / factor + smooth * inv
        medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
        return torch.where(medium, smoothed, inv), 1.0
    raise ValueError(kind)


def f64_inv_freq(c):
    """The same formulas in float64: the truth."""
    base, dim, s = c["rope_theta"], c["dim"], c["rope_scaling"]
    kind = s["rope_type"]
    default = 1.0 / base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    if kind == "linear":
        return default / s["factor"]
    if kind == "dynamic":
        return default  # (factor L / L - (factor - 1)) = 1 up to max_position_embeddings
    if kind == "yarn":
        factor = c["max_position_embeddings"] / s["original_max_position_embeddings"] \
            if "original_max_position_embeddings" in s else s["factor"]
        original = s.get("original_max_position_embeddings", c["max_position_embeddings"])

        def cdim(r):
            return (dim * math.log(original / (r * 2 * math.pi))) / (2 * math.log(base))

        low, high = cdim(s.get("beta_fast") or 32), cdim(s.get("beta_slow") or 1)
        if s.get("truncate", True):
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, dim - 1)
        high = high + 0.001 if low == high else high
        ramp = np.clip((np.arange(dim // 2) - low) / (high - low), 0, 1)
        return default / factor * ramp + default * (1 - ramp)
    if kind == "longrope":
        return default / np.array(s["short_factor"], dtype=np.float64)
    if kind == "llama3":
        factor, low_f, high_f = s["factor"], s["low_freq_factor"], s["high_freq_factor"]
        old = s["original_max_position_embeddings"]
        wavelen = 2 * math.pi / default
        smooth = (old / wavelen - low_f) / (high_f - low_f)
        out = np.where(wavelen > old / low_f, default / factor, default)
        medium = (wavelen >= old / high_f) & (wavelen <= old / low_f)
        return np.where(medium, (1 - smooth) * default / factor + smooth * default, out)
    raise ValueError(kind)


def cpp_scaling(c):
    """The emha::RopeScalingParams expression of case c (what the exporter writes)."""
    s, kind = c["rope_scaling"], c["rope_scaling"]["rope_type"]
    f = lambda v: float_literal(np.float32(v))  # noqa: E731
    if kind == "linear":
        return f"emha::rope_linear({f(s['factor'])})"
    if kind == "dynamic":
        return f"emha::rope_dynamic({f(s['factor'])}, {c['max_position_embeddings']})"
    if kind == "yarn":
        if "original_max_position_embeddings" in s:
            original = s["original_max_position_embeddings"]
            factor = c["max_position_embeddings"] / original
        else:
            original, factor = c["max_position_embeddings"], s["factor"]
        _, af = hf_inv_freq(c)
        given = af if s.get("attention_factor") is not None or s.get("mscale") else 0.0
        return (f"emha::rope_yarn({f(factor)}, {original}, {f(s.get('beta_fast') or 32)}, "
                f"{f(s.get('beta_slow') or 1)}, {f(given)}, {str(s.get('truncate', True)).lower()})")
    if kind == "longrope":
        original = c.get("original_max_position_embeddings", c["max_position_embeddings"])
        factor = c["max_position_embeddings"] / original if "original_max_position_embeddings" in c \
            else s["factor"]
        return f"emha::rope_longrope({c['name']}_short_factor, {f(factor)}, {original})"
    return (f"emha::rope_llama3({f(s['factor'])}, {f(s['low_freq_factor'])}, "
            f"{f(s['high_freq_factor'])}, {s['original_max_position_embeddings']})")


def case_lines(c, positions):
    name = c["name"]
    inv, af = hf_inv_freq(c)
    inv64 = f64_inv_freq(c)
    pos = torch.arange(positions).float()[:, None]
    freqs = pos * inv[None]  # inv_freq @ position_ids: one float32 product each
    cos, sin = freqs.cos() * af, freqs.sin() * af
    lines = []
    if c["rope_scaling"]["rope_type"] == "longrope":
        lines += ([f"inline constexpr float {name}_short_factor[] = {{"] +
                  wrap([float_literal(np.float32(v)) + "," for v in c["rope_scaling"]["short_factor"]],
                       "    ") + ["};"])
    lines += [f"struct {name} {{",
              f"  static constexpr const char* name = \"{name}\";",
              f"  static constexpr std::size_t d_rot = {c['dim']}, positions = {positions};",
              f"  static constexpr float base = {float_literal(np.float32(c['rope_theta']))};",
              f"  static constexpr emha::RopeScalingParams scaling = {cpp_scaling(c)};",
              f"  static constexpr float attention_factor = {float_literal(np.float32(af))};",
              f"  static constexpr double attention_factor_f64 = {double_literal(af)};"]
    for n, arr, fmt, ct in (("inv_freq", inv.numpy(), float_literal, "float"),
                            ("inv_freq_f64", inv64, double_literal, "double"),
                            ("cos", cos.numpy().ravel(), float_literal, "float"),
                            ("sin", sin.numpy().ravel(), float_literal, "float")):
        lines += ([f"  static constexpr {ct} {n}[] = {{"] + wrap([fmt(v) + "," for v in arr], "    ")
                  + ["  };"])
    return lines + ["};", ""]


def main():
    rng = np.random.default_rng(5)
    cases = [
        dict(name="llama3_1", rope_theta=500000.0, dim=128, max_position_embeddings=131072,
             rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                               high_freq_factor=4.0, original_max_position_embeddings=8192)),
        dict(name="llama3_2", rope_theta=500000.0, dim=64, max_position_embeddings=131072,
             rope_scaling=dict(rope_type="llama3", factor=32.0, low_freq_factor=1.0,
                               high_freq_factor=4.0, original_max_position_embeddings=8192)),
        dict(name="yarn_qwen2_5", rope_theta=1000000.0, dim=128, max_position_embeddings=131072,
             rope_scaling=dict(rope_type="yarn", factor=4.0, original_max_position_embeddings=32768)),
        dict(name="yarn_untruncated", rope_theta=150000.0, dim=64, max_position_embeddings=131072,
             rope_scaling=dict(rope_type="yarn", factor=32.0, beta_fast=32.0, beta_slow=1.0,
                               truncate=False, original_max_position_embeddings=4096)),
        dict(name="yarn_mscale", rope_theta=10000.0, dim=64, max_position_embeddings=4096,
             rope_scaling=dict(rope_type="yarn", factor=40.0, mscale=1.0, mscale_all_dim=0.707,
                               beta_fast=32, beta_slow=1)),
        dict(name="longrope_phi3", rope_theta=10000.0, dim=96, max_position_embeddings=131072,
             original_max_position_embeddings=4096,
             rope_scaling=dict(rope_type="longrope",
                               short_factor=[round(float(v), 4) for v in 1 + rng.random(48) * 0.2],
                               long_factor=[round(float(v), 4) for v in 1 + rng.random(48) * 40])),
        dict(name="linear_2", rope_theta=10000.0, dim=64, max_position_embeddings=4096,
             rope_scaling=dict(rope_type="linear", factor=2.0)),
        dict(name="dynamic_2", rope_theta=10000.0, dim=64, max_position_embeddings=2048,
             rope_scaling=dict(rope_type="dynamic", factor=2.0)),
    ]
    text = ["// Generated by tests/kernels/gen_rope_scaling_fixtures.py from PyTorch " + torch.__version__ +
            ": do not edit.", "#pragma once", "#include <cstddef>", "#include <tuple>", "",
            "#include \"emha/kernels/rope.hpp\"", "", "namespace emha::rope_scaling_fixtures {", ""]
    for c in cases:
        text += case_lines(c, 12)
    text += [f"using all = std::tuple<{', '.join(c['name'] for c in cases)}>;", "",
             "}  // namespace emha::rope_scaling_fixtures", ""]
    OUT.write_text("\n".join(text))


if __name__ == "__main__":
    main()

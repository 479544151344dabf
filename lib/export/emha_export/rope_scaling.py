# SPDX-License-Identifier: Apache-2.0
"""RoPE scaling: config.json's rope_scaling / rope_parameters as emha's Config::rope_scaling.

transformers' modeling_rope_utils.py (its transformers 5 form: yarn's truncate, mscale,
mscale_all_dim and original_max_position_embeddings; longrope's short factor up to the original
length) decides every value here. `resolve` turns the keys into the resolved parameters emha's
rope_yarn / rope_llama3 / ... take (each attention factor computed as transformers does, in
double); `inv_freq_f64` is the scaled inv_freq in float64 for the reference; `crc` is the blob's
CRC-32 of the parameters as the header writes them (emha's rope_scaling_crc, weight_blob.cpp).
"""
import math
import struct
import zlib

import torch

from .errors import fail

TYPES = {"linear": 1, "dynamic": 2, "yarn": 3, "longrope": 4, "llama3": 5}  # emha::RopeScaling
# The keys each type reads from rope_scaling (transformers' _compute_*_parameters); any other key
# is refused by name, since its meaning would be a guess.
KEYS = {"linear": {"factor"}, "dynamic": {"factor", "original_max_position_embeddings"},
        "yarn": {"factor", "attention_factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim",
                 "original_max_position_embeddings", "truncate"},
        "longrope": {"short_factor", "long_factor", "factor", "attention_factor",
                     "original_max_position_embeddings"},
        "llama3": {"factor", "low_freq_factor", "high_freq_factor",
                   "original_max_position_embeddings"}}
COMMON = {"rope_type", "type", "rope_theta", "partial_rotary_factor"}  # read elsewhere


def f32(v):
    return struct.unpack("<f", struct.pack("<f", float(v)))[0]


def resolve(where, key, s, max_pos, config_original, d_rot, max_seq, assumed):
    """The resolved scaling of rope_scaling `s` (from `where`'s `key`), or None for default.
    max_pos: config.json's max_position_embeddings; config_original: its top-level
    original_max_position_embeddings (Phi-3); max_seq: the layer's largest position + 1."""
    kind = s.get("rope_type", s.get("type"))
    if kind in (None, "default"):
        return None
    if kind not in KEYS:
        fail(f"{where} {key} rope_type '{kind}' is not a RoPE scaling emha knows (known: "
             f"{', '.join(sorted(KEYS))})")
    unknown = sorted(set(s) - KEYS[kind] - COMMON)
    if unknown:
        fail(f"{where} {key} ({kind}) has {', '.join(unknown)}, which transformers' {kind} "
             "scaling does not read: refused rather than guessed")

    def need(name, value):
        if value is None:
            fail(f"{where} {key} ({kind}) needs {name}")
        return value

    r = dict(type=kind, factor=1.0, original=0, low=1.0, high=4.0, beta_fast=32.0, beta_slow=1.0,
             truncate=True, attention_factor=0.0, short_factor=None, long_factor=None)
    if kind == "linear":
        r["factor"] = float(need("factor", s.get("factor")))
    elif kind == "dynamic":
        r["factor"] = float(need("factor", s.get("factor")))
        r["original"] = int(need("max_position_embeddings", max_pos))
        given = s.get("original_max_position_embeddings")
        if given is not None and given != max_pos:
            fail(f"{where} {key} (dynamic) original_max_position_embeddings {given} differs from "
                 f"max_position_embeddings {max_pos}: transformers' versions disagree on which "
                 "one dynamic NTK scales from")
        if d_rot <= 2:
            fail(f"{where} {key} (dynamic) on {d_rot} rotated dims: its exponent d / (d - 2) "
                 "is undefined")
    elif kind == "llama3":
        r.update(factor=float(need("factor", s.get("factor"))),
                 low=float(need("low_freq_factor", s.get("low_freq_factor"))),
                 high=float(need("high_freq_factor", s.get("high_freq_factor"))),
                 original=int(need("original_max_position_embeddings",
                                   s.get("original_max_position_embeddings"))))
    elif kind == "yarn":
        factor = float(need("factor", s.get("factor")))
        if "original_max_position_embeddings" in s:
            original = int(s["original_max_position_embeddings"])
            ratio = need("max_position_embeddings", max_pos) / original
            if ratio != factor:
                assumed.append(f"yarn factor {ratio:g} = max_position_embeddings / "
                               "original_max_position_embeddings (transformers 5; rope_scaling's "
                               f"factor {factor:g} is what versions before it use)")
            factor = ratio
        else:
            original = int(need("max_position_embeddings", max_pos))
        af, mscale, mscale_all_dim = (s.get(k) for k in ("attention_factor", "mscale",
                                                         "mscale_all_dim"))

        def get_mscale(scale, m=1):
            return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

        if af is None:
            af = get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim) \
                if mscale and mscale_all_dim else get_mscale(factor)
        r.update(factor=factor, original=original, beta_fast=float(s.get("beta_fast") or 32),
                 beta_slow=float(s.get("beta_slow") or 1), truncate=bool(s.get("truncate", True)),
                 attention_factor=float(af))
    elif kind == "longrope":
        short = need("short_factor", s.get("short_factor"))
        if not isinstance(short, list) or len(short) != d_rot // 2:
            fail(f"{where} {key} (longrope) short_factor must list {d_rot // 2} factors "
                 f"(rotated dims / 2), not {len(short) if isinstance(short, list) else short}")
        if config_original:
            original = int(config_original)
            factor = need("max_position_embeddings", max_pos) / original
        else:
            original = int(need("max_position_embeddings", max_pos))
            factor = float(need("factor", s.get("factor")))
        af = s.get("attention_factor")
        if af is None:
            af = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original))
        r.update(factor=factor, original=original, attention_factor=float(af),
                 short_factor=[float(v) for v in short])
    if kind in ("dynamic", "longrope") and max_seq > r["original"]:
        fail(f"{where} {key} ({kind}): the layer's {max_seq} positions (--max-seq-q / "
             f"--max-seq-kv) exceed {r['original']}, past which transformers recomputes the "
             "angles from each call's length (dynamic keeps them for later calls; longrope "
             "switches to long_factor): give at most that many")
    return r


def describe(r):
    """A few words for the summary line."""
    if r is None:
        return ""
    kind = r["type"]
    words = {"linear": f"factor {r['factor']:g}",
             "dynamic": f"factor {r['factor']:g}, exact up to {r['original']} positions",
             "llama3": f"factor {r['factor']:g}, low/high frequency factors {r['low']:g}/"
                       f"{r['high']:g}, original {r['original']}",
             "yarn": f"factor {r['factor']:g}, original {r['original']}, beta {r['beta_fast']:g}/"
                     f"{r['beta_slow']:g}, attention factor {r['attention_factor']:.6g}"
                     + ("" if r["truncate"] else ", untruncated"),
             "longrope": f"short factors up to {r['original']} positions, attention factor "
                         f"{r['attention_factor']:.6g}"}[kind]
    return f", {kind} scaling: {words}"


def cpp(r, short_name):
    """The emha::RopeScalingParams expression of r (the header's Config line, write.py)."""
    def h(v):
        return float.hex(f32(v)) + "f"
    kind = r["type"]
    if kind == "linear":
        return f"emha::rope_linear({h(r['factor'])})"
    if kind == "dynamic":
        return f"emha::rope_dynamic({h(r['factor'])}, {r['original']})"
    if kind == "llama3":
        return f"emha::rope_llama3({h(r['factor'])}, {h(r['low'])}, {h(r['high'])}, {r['original']})"
    if kind == "yarn":
        return (f"emha::rope_yarn({h(r['factor'])}, {r['original']}, {h(r['beta_fast'])}, "
                f"{h(r['beta_slow'])}, {h(r['attention_factor'])}, "
                f"{'true' if r['truncate'] else 'false'})")
    return (f"emha::rope_longrope({short_name}, {h(r['factor'])}, {r['original']}, "
            f"{h(r['attention_factor'])})")


def crc(r, d_rot):
    """CRC-32 of the parameters as cpp() writes them (emha's rope_scaling_crc)."""
    b = struct.pack("<IfIffffIf", TYPES[r["type"]], r["factor"], r["original"], r["low"], r["high"],
                    r["beta_fast"], r["beta_slow"], int(r["truncate"]), r["attention_factor"])
    if r["type"] == "longrope":
        b += struct.pack(f"<{d_rot // 2}f", *r["short_factor"])
    return zlib.crc32(b) & 0xFFFFFFFF


def inv_freq_f64(r, base, d_rot):
    """(inv_freq [d_rot / 2] float64, attention factor): the scaled frequencies in exact math."""
    default = 1.0 / (base ** (torch.arange(0, d_rot, 2, dtype=torch.float64) / d_rot))
    if r is None or r["type"] == "dynamic":  # dynamic is the default up to its original length
        return default, 1.0
    kind, factor = r["type"], r["factor"]
    if kind == "linear":
        return default / factor, 1.0
    if kind == "longrope":
        return default / torch.tensor(r["short_factor"], dtype=torch.float64), r["attention_factor"]
    if kind == "llama3":
        wavelen = 2 * math.pi / default
        low_wl, high_wl = r["original"] / r["low"], r["original"] / r["high"]
        smooth = (r["original"] / wavelen - r["low"]) / (r["high"] - r["low"])
        out = torch.where(wavelen > low_wl, default / factor, default)
        medium = (wavelen >= high_wl) & (wavelen <= low_wl)
        return torch.where(medium, (1 - smooth) * default / factor + smooth * default, out), 1.0

    def cdim(rot):
        return (d_rot * math.log(r["original"] / (rot * 2 * math.pi))) / (2 * math.log(base))
    low, high = cdim(r["beta_fast"]), cdim(r["beta_slow"])
    if r["truncate"]:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, d_rot - 1)
    high = high + 0.001 if low == high else high
    ramp = ((torch.arange(d_rot // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
    return default / factor * ramp + default * (1 - ramp), r["attention_factor"]

# SPDX-License-Identifier: Apache-2.0
"""--quantize int8 --calibration FILE, the full-integer layer
(Config::arithmetic s8, lib/include/emha/attention/mha_s8.hpp), quantized as TFLite's post-training
quantization does it (tensorflow/lite/tools/optimize, kernels/internal/quantization_util.cc):

  activations  int8 per tensor, asymmetric: each stage's range over the calibration inputs run
               through the float64 module (input, Q, K, V, the scaled scores over the keys a row
               attends, the context, the output), kept as float32 like TFLite's calibrator's,
               widened to hold 0; scale = (max - min) / 255 and zero point
               round(-128 - min / scale) (half away from zero) in float32, as
               quantization_utils.cc's GetAsymmetricQuantizationParams
  weights      int8 per output channel, symmetric in [-127, 127] (int8.quantize)
  biases       int32 at s_x s_w[j] (a float32 product), half away from zero; the input zero point folded in:
               bias[j] - z_x sum_p w[j][p], so the device never subtracts it
  multipliers  QuantizeMultiplier(real) = (M0 in Q31, shift): s_x s_w[j] / s_y per projection row,
               s_Q s_K scale / s_scores for Q K^T (the score scale folded in), s_V / 256 / s_context
               for P V, from the float32 scales in double, as TFLite's kernels prepare them
  softmax      PreprocessSoftmaxScaling(beta 1, s_scores, 5 integer bits) and
               CalculateInputRadius: (input_multiplier, input_left_shift, diff_min); output scale
               1/256, zero point -128

The header stores only integers (and, for the caller, the input's and output's scale and zero
point). What the s8 layer lacks is refused: positions, norms, QK-norm, sliding windows, the flat
head split, kdim / vdim != d_model (the calibration file holds one input: self-attention).
"""
import math
import struct
import zlib

import numpy as np
import torch

from .int8 import quantize
from .errors import fail, shape_str
from .write import HEADER_BYTES, align

SCALED_DIFF_BITS = 5  # TFLite's kScaledDiffIntegerBits (softmax int8)
STAGES = ("query", "q", "k", "v", "scores", "context", "out")
PROJ = (("q", "query", "q"), ("k", "query", "k"), ("v", "query", "v"), ("out", "context", "out"))


def round_away(x):
    """std::round: half away from zero."""
    return int(math.floor(abs(x) + 0.5)) * (1 if x >= 0 else -1)


def quantize_multiplier(real, single):
    """TFLite's QuantizeMultiplier (quantization_util.cc): (M0, shift), real = M0 2^(shift - 31)."""
    if real == 0.0:
        return 0, 0
    q, shift = math.frexp(real)
    m = round_away(q * (1 << 31))
    if m == 1 << 31:
        m, shift = m // 2, shift + 1
    if shift < -31:
        return 0, 0
    if single and shift > 30:  # TFLITE_SINGLE_ROUNDING's limit
        return (1 << 31) - 1, 30
    return m, shift


def softmax_params(scores_scale, single):
    """softmax_common.cc's int8 preparation: (input_multiplier, input_left_shift, diff_min)."""
    cap = (1 << 30) - 1.0 if single else (1 << 31) - 1.0
    real = min(float(np.float32(scores_scale)) * (1 << (31 - SCALED_DIFF_BITS)), cap)
    m, shift = quantize_multiplier(real, single)
    if real <= 1.0 or shift < 0:
        fail(f"the scores' scale {scores_scale:g} is too small for TFLite's int8 softmax")
    radius = math.floor(((1 << SCALED_DIFF_BITS) - 1) * (1 << (31 - SCALED_DIFF_BITS)) / (1 << shift))
    return m, shift, -radius


def tensor_params(lo, hi):
    """(scale, zero point) of a calibrated range as TFLite's GetAsymmetricQuantizationParams
    computes them, in float32: the range widened to hold 0, scale = (max - min) / 255,
    zero point = round(-128 - min / scale) clamped to [-128, 127]."""
    f = np.float32
    lo, hi = min(f(lo), f(0)), max(f(hi), f(0))
    if hi == lo:
        return 1.0, -128  # a stage that is always 0
    scale = f(hi - lo) / f(255)
    return float(scale), max(-128, min(127, round_away(float(f(-128) - lo / scale))))


def check_supported(cfg, flag="int8"):
    c = cfg
    why = [w for w, bad in (
        (f"positions ({c['position']})", c["position"] != "none"),
        (f"a norm ({c['norm']})", c["norm"] != "none"),
        (f"QK-norm ({c['qk_norm']})", c["qk_norm"] != "none"),
        (f"a sliding window ({c['sliding_window']})", c["sliding_window"]),
        ("the flat head split", c["head_split"] != "columns"),
        (f"kdim {c['kdim']} / vdim {c['vdim']} != d_model {c['d_model']} (the calibration file "
         "holds one input: self-attention)", (c["kdim"], c["vdim"]) != (c["d_model"],) * 2),
    ) if bad]
    if why:
        fail(f"--quantize {flag}: the integer layer has no " + "; no ".join(why))


def load_calibration(path, d_model):
    """[N, S, d_model] float64 from a .npy or a torch.save'd tensor ([S, d_model]: N = 1)."""
    try:
        x = (torch.from_numpy(np.load(path)) if str(path).endswith(".npy")
             else torch.load(path, weights_only=True))
    except Exception as e:  # noqa: BLE001 (any unreadable file is the same error)
        fail(f"--calibration {path}: not a tensor ({e.__class__.__name__}: {e})")
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        fail(f"--calibration {path}: not a floating-point tensor")
    x = x[None] if x.dim() == 2 else x
    if x.dim() != 3 or x.shape[-1] != d_model or x.shape[0] * x.shape[1] == 0:
        fail(f"--calibration {path}: shape {shape_str(x.shape)}, expected [N, S, {d_model}] or "
             f"[S, {d_model}]")
    if not bool(torch.isfinite(x).all()):
        fail(f"--calibration {path}: not finite")
    return x.double()


def stages(cfg, t, x, causal):
    """The float64 module on one sequence x [S, d_model]: each stage's values (the scores only
    where a row attends)."""
    h, kvh, d_k, n = cfg["heads"], cfg["kv_heads"], cfg["d_k"], x.shape[0]
    w = {k: v.double() for k, v in t.items()}
    y = {}
    for r, _, _ in PROJ[:3]:
        y[r] = x @ w[r + "_weight"].T + w[r + "_bias"]
    q = y["q"].view(n, h, d_k).transpose(0, 1)
    k = y["k"].view(n, kvh, d_k).transpose(0, 1).repeat_interleave(h // kvh, 0)
    v = y["v"].view(n, kvh, d_k).transpose(0, 1).repeat_interleave(h // kvh, 0)
    scores = (q @ k.transpose(1, 2)) * cfg["s8_scale"]
    blocked = (torch.arange(n)[:, None] < torch.arange(n)[None, :]) if causal else \
        torch.zeros(n, n, dtype=torch.bool)
    y["scores"] = scores[:, ~blocked]
    p = torch.softmax(scores.masked_fill(blocked[None], float("-inf")), -1)
    y["context"] = (p @ v).transpose(0, 1).reshape(n, h * d_k)
    y["out"] = y["context"] @ w["out_weight"].T + w["out_bias"]
    y["query"] = x
    return y


def split(cfg, tensors):
    """The four projections' float weights [out, in] and biases (zeros where none)."""
    q_dim, kv_dim, d = cfg["heads"] * cfg["d_k"], cfg["kv_heads"] * cfg["d_k"], cfg["d_model"]
    w_in = tensors["in_proj_weight"].double()
    b_in = tensors.get("in_proj_bias")
    t, at = {}, 0
    for r, start, rows in (("q", 0, q_dim), ("k", q_dim, kv_dim), ("v", q_dim + kv_dim, kv_dim)):
        t[r + "_weight"] = w_in[start:start + rows]
        if cfg["bias"][r]:
            t[r + "_bias"] = b_in[at:at + rows].double()
            at += rows
        else:
            t[r + "_bias"] = torch.zeros(rows, dtype=torch.float64)
    t["out_weight"] = tensors["out_proj_weight"].double()
    t["out_bias"] = (tensors["out_proj_bias"].double() if "out_proj_bias" in tensors
                     else torch.zeros(d, dtype=torch.float64))
    return t


def calibration_ranges(cfg, t, calibration, causal):
    """{stage: (min, max)} over the calibration inputs run through the float64 module (stages)."""
    ranges = {}
    for x in calibration:
        for name, v in stages(cfg, t, x, causal).items():
            lo, hi = ranges.get(name, (math.inf, -math.inf))
            if v.numel():
                ranges[name] = (min(lo, float(v.min())), max(hi, float(v.max())))
    return ranges


def quantize_layer(cfg, tensors, calibration, causal, single):
    """Every integer the s8 layer stores, and the lines to print."""
    check_supported(cfg)
    cfg["s8_scale"] = float(cfg["scale"]) if cfg["scale"] else cfg["d_k"] ** -0.5
    t = split(cfg, tensors)
    ranges = calibration_ranges(cfg, t, calibration, causal)
    tp = {s: tensor_params(*ranges.get(s, (0.0, 0.0))) for s in STAGES}
    out = {"zero_point": {s: tp[s][1] for s in STAGES}, "scale": {s: tp[s][0] for s in STAGES}}
    lines = []
    for r, x_name, y_name in PROJ:
        q, s_w, _ = quantize(t[r + "_weight"].float())
        s_x, z_x = tp[x_name]
        s_y = tp[y_name][0]
        s_w = [float(v) for v in s_w]
        bias = [round_away(float(b) / float(np.float32(s_x) * np.float32(sw)))  # float32 s_x s_w
                for b, sw in zip(t[r + "_bias"].tolist(), s_w)]
        sums = q.to(torch.int64).sum(dim=1).tolist()
        folded = [b - z_x * s for b, s in zip(bias, sums)]
        if any(not -2**31 <= b < 2**31 for b in folded):
            fail(f"--quantize int8: {r}'s bias does not fit int32 at scale s_x s_w")
        out[r] = dict(weight=q, bias=folded,
                      multiplier=[quantize_multiplier(s_x * sw / s_y, single) for sw in s_w])
    out["scores"] = quantize_multiplier(tp["q"][0] * tp["k"][0] * cfg["s8_scale"] / tp["scores"][0], single)
    out["softmax"] = softmax_params(tp["scores"][0], single)
    out["context_multiplier"] = quantize_multiplier(tp["v"][0] / 256.0 / tp["context"][0], single)
    n = calibration.shape[0] * calibration.shape[1]
    lines.append(f"emha-export: int8 calibration: {calibration.shape[0]} sequences, {n} rows; "
                 + ", ".join(f"{s} [{ranges[s][0]:.4g}, {ranges[s][1]:.4g}] -> scale {tp[s][0]:.4g} "
                             f"zero point {tp[s][1]}" for s in STAGES if s in ranges))
    return out, lines


def c_ints(name, ctype, values, size_expr, what, section):
    attr = f'[[gnu::section("{section}")]] ' if section else ""
    lines = [f"// {what}", f"{attr}alignas(64) inline constexpr {ctype} {name}[{len(values)}] = {{"]
    row = "   "
    for v in values:
        v = f"{v},"
        if len(row) + 1 + len(v) > 100:
            lines.append(row)
            row = "   "
        row += " " + v
    return lines + [row, "};", f"static_assert(sizeof({name}) / sizeof({ctype}) == {size_expr});", ""]


def config_lines(c, name, arithmetic, single):
    """An integer layer's header from its namespace's start: its Config (arithmetic s8 or s16x8)
    and the head sizes."""
    rounding = "single_rounding" if single else "double_rounding"
    return [
        f"namespace {name} {{", "",
        f"struct Config : emha::MhaConfig<{c['d_model']}, {c['heads']}, {c['max_seq_q']}, {c['max_seq_kv']}> {{",
        f"  static constexpr std::size_t kv_heads = {c['kv_heads']};",
        f"  static constexpr std::size_t head_dim = {c['head_dim']};",
        f"  static constexpr std::size_t max_batch = {c['max_batch']};",
        f"  static constexpr bool attention_weights = {'true' if c['attention_weights'] else 'false'};",
        f"  static constexpr emha::Arithmetic arithmetic = emha::Arithmetic::{arithmetic};",
        f"  static constexpr emha::Rounding rounding = emha::Rounding::{rounding};",
        "};",
        "static_assert(emha::detail::check_config<Config>());", "",
        "inline constexpr std::size_t d_k = Config::head_dim;",
        "inline constexpr std::size_t q_dim = Config::heads * d_k;",
        "inline constexpr std::size_t kv_dim = Config::kv_heads * d_k;", "",
    ]


def integer_header(cfg, qz, name, section, source, single, scheme):
    """The C++ header of a full-integer layer. `scheme` says what differs between s8 and 16x8:
    flag, arithmetic, intro (comment lines), io (the caller's scales and zero points), bias
    (C type, values of one row set, what), weights_type, params (the lines that set the weights'
    scalar fields)."""
    lines = [
        f"// Generated by emha_export.py --quantize {scheme['flag']} from {source} (torch {torch.__version__}).",
    ] + scheme["intro"] + [
        "#pragma once", "#include <cstddef>", "#include <cstdint>", "", '#include "emha/emha.hpp"', "",
    ] + config_lines(cfg, name, scheme["arithmetic"], single) + scheme["io"] + [""]
    shapes = {"q": ("q_dim", "Config::d_model"), "k": ("kv_dim", "Config::d_model"),
              "v": ("kv_dim", "Config::d_model"), "out": ("Config::d_model", "q_dim")}
    bias_type, bias_values, bias_what = scheme["bias"]
    for r, (rows, cols) in shapes.items():
        p = qz[r]
        rr, cc = rows.replace("Config::", ""), cols.replace("Config::", "")
        lines += c_ints(f"{r}_weight", "std::int8_t", [int(v) for v in p["weight"].reshape(-1)],
                        f"{rows} * {cols}", f"[{rr}, {cc}] int8 in [-127, 127]", section)
        lines += c_ints(f"{r}_bias", bias_type, bias_values(p["bias"]), rows, f"[{rr}] {bias_what}", section)
        lines += c_ints(f"{r}_multiplier", "emha::QuantizedMultiplier",
                        [f"{{{m}, {s}}}" for m, s in p["multiplier"]], rows,
                        f"[{rr}] (M0, shift): s_in s_w[j] / s_out", section)
    weights = scheme["weights_type"]
    lines += ["// The layer's weights: pass to MultiHeadAttention<Config>::set_weights().",
              f"inline {weights} weights() noexcept {{", f"  {weights} w;"]
    lines += [f"  w.{r} = {{{{{r}_weight}}, {{{r}_bias}}, {{{r}_multiplier}}}};" for r in shapes]
    lines += scheme["params"] + ["  return w;", "}", "", f"}}  // namespace {name}", ""]
    return "\n".join(lines)


def header_text(cfg, qz, name, section, source, single):
    zp, sc = qz["zero_point"], qz["scale"]
    (m, s), (mc, scx), sm = qz["scores"], qz["context_multiplier"], qz["softmax"]
    zero_points = [f"  w.zero_point_{field} = {zp[stage]};" for stage, field in (
        ("query", "query"), ("query", "key"), ("query", "value"), ("q", "q"), ("k", "k"), ("v", "v"),
        ("scores", "scores"), ("context", "context"), ("out", "out"))]
    return integer_header(cfg, qz, name, section, source, single, dict(
        flag="int8", arithmetic="s8",
        intro=["// Do not edit. The full-integer layer (emha::Arithmetic::s8): TFLite's int8 semantics, every",
               "// scale folded into integer multipliers; layout 0: PyTorch row-major [out, in]."],
        io=["// For the caller (the layer stores no float): query = clamp(round(x / input_scale) +",
            "// input_zero_point, -128, 127); y = (out - output_zero_point) * output_scale.",
            f"inline constexpr float input_scale = {float(sc['query']).hex()}f;  // {sc['query']:.9g}",
            f"inline constexpr std::int32_t input_zero_point = {zp['query']};",
            f"inline constexpr float output_scale = {float(sc['out']).hex()}f;  // {sc['out']:.9g}",
            f"inline constexpr std::int32_t output_zero_point = {zp['out']};"],
        bias=("std::int32_t", lambda b: b, "int32, the input zero point folded in"),
        weights_type="emha::MhaS8Weights",
        params=zero_points + [f"  w.scores = {{{m}, {s}}};", f"  w.softmax = {{{sm[0]}, {sm[1]}, {sm[2]}}};",
                              f"  w.context = {{{mc}, {scx}}};"]))


# --------------------------------------------------------------------------------------------------
# The blob: version 4, arithmetic s8 (lib/include/emha/io/weight_blob.hpp)

S8_IDS = dict(q_weight=19, k_weight=20, v_weight=21, out_weight=22, q_bias=32, k_bias=33, v_bias=34,
              out_bias=35, q_multiplier=36, k_multiplier=37, v_multiplier=38, out_multiplier=39, params=40)


def blob_bytes(cfg, qz, single):
    c = cfg
    zp = qz["zero_point"]
    tensors = {"params": np.array([zp[s] for s in ("query", "query", "query", "q", "k", "v", "scores", "context",
                                                   "out")] + list(qz["scores"]) + list(qz["softmax"])
                                  + list(qz["context_multiplier"]), dtype="<i4").reshape(16, 1)}
    for r in ("q", "k", "v", "out"):
        p = qz[r]
        tensors[r + "_weight"] = p["weight"].numpy().astype("i1")
        tensors[r + "_bias"] = np.array(p["bias"], dtype="<i4").reshape(-1, 1)
        tensors[r + "_multiplier"] = np.array(p["multiplier"], dtype="<i4").reshape(-1, 2)
    entries = sorted((S8_IDS[k], a) for k, a in tensors.items())
    table, body = bytearray(), bytearray()
    offset = align(HEADER_BYTES + 16 * len(entries))
    for tid, arr in entries:
        table += struct.pack("<4I", tid, arr.shape[0], arr.shape[1], offset)
        data = arr.tobytes()
        body += data + bytes(align(len(data)) - len(data))
        offset += align(len(data))
    head = bytearray(HEADER_BYTES)
    struct.pack_into("<4s11I", head, 0, b"EMHA", 4, offset, 0, HEADER_BYTES, 1, 0, c["d_model"], c["heads"],
                     c["kv_heads"], c["kdim"], c["vdim"])
    struct.pack_into("<I", head, 92, len(entries))
    struct.pack_into("<I", head, 104, c["head_dim"])
    struct.pack_into("<3I", head, 140, 0, 1, 1 if single else 0)  # weight_type, arithmetic s8, rounding
    blob = head + table
    blob += bytes(align(len(blob)) - len(blob)) + body
    assert len(blob) == offset
    struct.pack_into("<I", blob, 12, zlib.crc32(bytes(blob[16:])) & 0xFFFFFFFF)
    return bytes(blob)

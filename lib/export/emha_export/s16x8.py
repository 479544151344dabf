# SPDX-License-Identifier: Apache-2.0
"""--quantize 16x8 --calibration FILE, the 16x8 layer (Config::arithmetic
s16x8, lib/include/emha/attention/mha_s16x8.hpp), quantized as TFLite's post-training 16x8
quantization does it (tensorflow/lite/tools/optimize/quantization_utils.cc, the 16x8 scheme):

  activations  int16 per tensor, symmetric, zero point 0: each stage's range over the calibration
               inputs run through the float64 module (s8.stages: input, Q, K, V, the
               scaled scores over the keys a row attends, the context, the output), kept as
               float32; scale = max(|min|, |max|) / 32767 in float32
  weights      int8 per output channel, symmetric in [-127, 127] (int8.quantize)
  biases       int64 at s_x s_w[j] (a float32 product), half away from zero
  multipliers  QuantizeMultiplier: s_x s_w[j] / s_y per projection row, s_Q s_K scale / s_scores
               for Q K^T, s_V / 32768 / s_context for P V (each shift at most 7: TFLite's int64
               requantization), from the float32 scales in double
  softmax      QuantizeMultiplier(s_scores * beta / (10 / 65535)) (TFLite Micro's
               softmax_common.cc for int16); output scale 1/32768, zero point 0

The header stores only integers (and, for the caller, the input's and output's scale); the 16x8
layer refuses what the s8 one does (s8.check_supported). No blob format yet: --blob
is refused with --quantize 16x8.
"""
import numpy as np

from .int8 import quantize
from .errors import fail
from .s8 import PROJ, STAGES, calibration_ranges, integer_header, quantize_multiplier, round_away, split


def symmetric_scale(lo, hi):
    """max(|min|, |max|) / 32767 in float32 (1 for a stage that is always 0)."""
    f = np.float32
    r = max(abs(f(lo)), abs(f(hi)))
    return 1.0 if r == 0 else float(r / f(32767))


def checked(name, m_shift):
    if m_shift[1] > 7:
        fail(f"--quantize 16x8: {name}'s multiplier 2^{m_shift[1]} is past TFLite's int64 requantization (shift <= 7)")
    return m_shift


def quantize_layer(cfg, tensors, calibration, causal, single):
    """Every integer the 16x8 layer stores, and the lines to print."""
    cfg["s8_scale"] = float(cfg["scale"]) if cfg["scale"] else cfg["d_k"] ** -0.5
    t = split(cfg, tensors)
    ranges = calibration_ranges(cfg, t, calibration, causal)
    sc = {s: symmetric_scale(*ranges.get(s, (0.0, 0.0))) for s in STAGES}
    out = {"scale": sc}
    for r, x_name, y_name in PROJ:
        q, s_w, _ = quantize(t[r + "_weight"].float())
        s_w = [float(v) for v in s_w]
        bias = [round_away(float(b) / float(np.float32(sc[x_name]) * np.float32(sw)))
                for b, sw in zip(t[r + "_bias"].tolist(), s_w)]
        if any(abs(b) >= 2**46 for b in bias):
            fail(f"--quantize 16x8: {r}'s bias does not fit 2^46 at scale s_x s_w")
        out[r] = dict(weight=q, bias=bias, multiplier=[
            checked(r, quantize_multiplier(sc[x_name] * sw / sc[y_name], single)) for sw in s_w])
    out["scores"] = checked("the scores", quantize_multiplier(sc["q"] * sc["k"] * cfg["s8_scale"] / sc["scores"], single))
    out["softmax"] = quantize_multiplier(sc["scores"] / (10.0 / 65535.0), single)
    out["context_multiplier"] = checked("the context", quantize_multiplier(sc["v"] / 32768.0 / sc["context"], single))
    n = calibration.shape[0] * calibration.shape[1]
    lines = [f"emha-export: 16x8 calibration: {calibration.shape[0]} sequences, {n} rows; "
             + ", ".join(f"{s} [{ranges[s][0]:.4g}, {ranges[s][1]:.4g}] -> scale {sc[s]:.4g}"
                         for s in STAGES if s in ranges)]
    return out, lines


def header_text(cfg, qz, name, section, source, single):
    sc = qz["scale"]
    (m, s), (mc, scx), sm = qz["scores"], qz["context_multiplier"], qz["softmax"]
    return integer_header(cfg, qz, name, section, source, single, dict(
        flag="16x8", arithmetic="s16x8",
        intro=["// Do not edit. The 16x8 layer (emha::Arithmetic::s16x8): TFLite's 16x8 semantics (int16",
               "// activations, zero point 0), every scale folded into integer multipliers; layout 0: PyTorch",
               "// row-major [out, in]."],
        io=["// For the caller (the layer stores no float): query = clamp(round(x / input_scale), -32768,",
            "// 32767); y = out * output_scale.",
            f"inline constexpr float input_scale = {float(sc['query']).hex()}f;  // {sc['query']:.9g}",
            f"inline constexpr float output_scale = {float(sc['out']).hex()}f;  // {sc['out']:.9g}"],
        bias=("std::int64_t", lambda b: [f"std::int64_t({v})" for v in b], "int64 at s_in s_w[j]"),
        weights_type="emha::MhaS16x8Weights",
        params=[f"  w.scores = {{{m}, {s}}};", f"  w.softmax.input = {{{sm[0]}, {sm[1]}}};",
                f"  w.context = {{{mc}, {scx}}};"]))

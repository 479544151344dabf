# SPDX-License-Identifier: Apache-2.0
"""Int8 weights (--weights int8), emha's W8A32 scheme (Config::weight_type).

Each projection's weight [out, in] is int8 per output channel (a row), symmetric, zero point 0,
in [-127, 127], with one float32 scale per row: weight[j][p] = q[j][p] * scale[j]. quantize()
makes them from float weights: scale = amax(|row|) / 127 (float32), q = round(w / scale) with
torch.round's ties to even, clamped to [-127, 127]; a row of zeros gets scale 1 and q 0. Never
/127.5 (torch's qint8 observers), never -128.

A checkpoint may bring its own: a projection weight stored as int8 with a float `<name>_scale`
[out] beside it (`<prefix>.q_proj.weight` + `<prefix>.q_proj.weight_scale`, nn.MultiheadAttention's
`in_proj_weight` + `in_proj_weight_scale`). checkpoint_int8() checks them and the families read
them twice (Checkpoint.view "values", then "scales"), so that every row split, concatenation and
permutation a family makes applies to the scales alike; they are exported bit for bit.
"""
import torch

from .errors import fail, shape_str

PROJECTIONS = ("in_proj_weight", "q_proj_weight", "k_proj_weight", "v_proj_weight",
               "out_proj_weight")


def quantize(w):
    """(q int8 [out, in], scale float32 [out], zero rows) of the float32 weight w [out, in]."""
    w = w.detach().to(torch.float32)
    amax = w.abs().amax(dim=1)
    zero = amax == 0
    scale = torch.where(zero, torch.ones_like(amax), amax / 127.0)
    q = torch.round(w / scale[:, None]).clamp(-127, 127).to(torch.int8)
    return q, scale, int(zero.sum())


def dequantize(q, scale):
    """float32 q * scale[:, None]: the weight the layer computes with (torchao int8_weight_only)."""
    return q.to(torch.float32) * scale[:, None]


def errors(w, q, scale):
    """(max |w - q s| / max |w|, rms(w - q s) / rms(w)) in float64; 0 for a zero weight."""
    w = w.detach().double()
    diff = w - dequantize(q, scale).double()
    wmax, wrms = float(w.abs().max()), float(w.pow(2).mean().sqrt())
    return (float(diff.abs().max()) / wmax if wmax else 0.0,
            float(diff.pow(2).mean().sqrt()) / wrms if wrms else 0.0)


def report(name, w, q, scale, zero_rows, given):
    """The line printed per quantized tensor."""
    rows, cols = q.shape
    before, after = 4 * rows * cols, rows * cols + 4 * rows
    size = f"{before} -> {after} B (int8 + scales), {before - after} B saved"
    if given:
        return (f"emha-export: int8 {name} {shape_str(q.shape)}: the checkpoint's int8 and "
                f"scales, bit for bit; {size}")
    max_rel, rms_rel = errors(w, q, scale)
    zeros = (f"; {zero_rows} zero rows (scale 1, all zeros)" if zero_rows else "")
    return (f"emha-export: int8 {name} {shape_str(q.shape)}: max |w - q*s| / max |w| "
            f"{max_rel:.3e}, rms(w - q*s) / rms(w) {rms_rel:.3e}; {size}{zeros}")


def output_report(out_int8, out_float):
    """The line printed beside the reference: how far the int8 weights move the layer's output
    from the float module's on the reference input (both float64 forwards)."""
    diff = (out_int8 - out_float).abs()
    top, rms = float(out_float.abs().max()), float(out_float.pow(2).mean().sqrt())
    return (f"emha-export: int8 weights move the reference output by max {float(diff.max()):.3e} "
            f"(max |float output| {top:.3g}), rms {float(diff.pow(2).mean().sqrt()):.3e} "
            f"(rms float output {rms:.3g}): quantization, against the float module")


def checkpoint_int8(tensors, name):
    """(q as float32, scale float32 [rows]) of the checkpoint's int8 tensor `name`, checked: a 2-D
    weight, no -128, its float `name`_scale [rows] beside it, every scale finite and > 0."""
    t = tensors[name]
    sname = name + "_scale"
    if t.dim() != 2:
        fail(f"{name} is int8 with shape {shape_str(t.shape)}: only the projections' weights "
             "[out, in] may be int8 (biases, norms and tables stay float)")
    if sname not in tensors:
        fail(f"{name} is int8 but {sname} is missing (an int8 weight needs its float scale "
             f"[{t.shape[0]}], one per output row, beside it)")
    low = (t == -128).nonzero()
    if len(low):
        fail(f"{name} holds -128 at {[int(i) for i in low[0]]} ({len(low)} in all): emha's int8 "
             "weights are symmetric, in [-127, 127]")
    s = tensors[sname]
    if not s.is_floating_point() or tuple(s.shape) != (t.shape[0],):
        fail(f"{sname} is {str(s.dtype).replace('torch.', '')} {shape_str(s.shape)}, expected "
             f"float {shape_str((t.shape[0],))} (one scale per row of {name} "
             f"{shape_str(t.shape)})")
    s = s.detach().to(torch.float32)
    bad = ~(torch.isfinite(s) & (s > 0))
    if bool(bad.any()):
        i = int(bad.nonzero()[0][0])
        fail(f"{sname}[{i}] is {float(s[i])}: every scale must be finite and > 0")
    return t.detach().to(torch.float32).contiguous(), s


def projection_scales(parts, scale_parts):
    """{role: float32 scale [rows]} of q, k, v, o when the checkpoint brought int8 weights (None
    when it brought none): scale_parts is the family read again in the "scales" view, where an
    int8 weight is its row scales broadcast over the columns and a float one is NaN."""
    int8 = {r: bool(torch.isfinite(scale_parts[r][1]).all()) for r in "qkvo"}
    if not any(int8.values()):
        return None
    if not all(int8.values()):
        have = next(parts[r][0] for r in "qkvo" if int8[r])
        miss = next(parts[r][0] for r in "qkvo" if not int8[r])
        fail(f"{have} is int8 but {miss} is float: bring all four projections' weights as int8 "
             "(with their scales) or none")
    scales = {}
    for r in "qkvo":
        s = scale_parts[r][1]
        if not bool((s == s[:, :1]).all()):
            fail(f"{parts[r][0]}: its int8 rows are not the output channels after the family's "
                 "layout (a Conv1D's [in, out] weight cannot bring int8 scales per row)")
        scales[r] = s[:, 0].contiguous()
    return scales

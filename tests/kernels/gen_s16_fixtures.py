# SPDX-License-Identifier: Apache-2.0
"""Generate tests/kernels/fixtures/s16.hpp: TFLite's 16x8 integer arithmetic (int16 activations,
int8 weights, zero points 0), re-implemented in Python from its published code, never from
emha's (tflite-micro 90b983c, 2026-08-20):

  MultiplyByQuantizedMultiplier(int64_t, ...)  tensorflow/lite/kernels/internal/common.cc: the
                                  multiplier rounded to Q15, one rounding; the same in both builds
  FullyConnectedPerChannel<int16_t, int8_t, int16_t, int64_t>
                                  tensorflow/lite/kernels/internal/reference/integer_ops/fully_connected.h
  BatchMatMul<int16_t, int64_t>   tensorflow/lite/kernels/internal/reference/batch_matmul.h, as
                                  tensorflow/lite/micro/kernels/batch_matmul.cc calls it (EvalInt16)
  SoftmaxInt16                    tensorflow/lite/kernels/internal/reference/softmax.h
                                  (SoftMaxCalculateExp, LUTLookup of common.h), with the parameters
                                  and tables of tensorflow/lite/micro/kernels/softmax_common.cc
                                  (QuantizeMultiplier(s * beta / (10 / 65535)); LUTPopulate<int16_t>:
                                  detail::LUTPopulateInt16<float> of common.h)
  MultiplyByQuantizedMultiplier(int32_t, ...), QuantizeMultiplier: gen_requant_fixtures.py

The tables are computed here with numpy's float32 arithmetic and exp in float64 rounded to
float32 (LUTPopulateInt16 runs the C library's expf): the fixture carries them, and the test
checks that emha's constant tables equal them.

    /usr/bin/python3 tests/kernels/gen_s16_fixtures.py      (from the repository root)

Deterministic; overwrites only tests/kernels/fixtures/s16.hpp.
"""
import math
import pathlib
import random
import sys

import numpy as np

sys.dont_write_bytecode = True
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from gen_requant_fixtures import c_array, quantize_multiplier, tflite_double, tflite_single, wrap32  # noqa: E402

OUT = pathlib.Path(__file__).resolve().parent / "fixtures" / "s16.hpp"
F = np.float32


def mbqm64(x, m, shift):
    """MultiplyByQuantizedMultiplier(int64_t x, ...): int32 (the C cast of the int64 result)."""
    assert -(1 << 47) <= x < (1 << 47) and m >= 0 and -31 <= shift < 8
    reduced = (m + (1 << 15)) >> 16 if m < 0x7FFF0000 else 0x7FFF
    total_shift = 15 - shift
    return wrap32((x * reduced + (1 << (total_shift - 1))) >> total_shift)


def sat16(v):
    return min(max(v, -32768), 32767)


def fully_connected_s16x8(x, w, bias, mults):
    """FullyConnectedPerChannel, int16 input (offset 0), int8 filter, int64 bias (or none)."""
    acc = x.astype(object) @ w.T.astype(object)
    out = np.zeros(acc.shape, dtype=np.int64)
    for b in range(acc.shape[0]):
        for c in range(acc.shape[1]):
            m, shift = mults[c]
            out[b, c] = sat16(mbqm64(int(acc[b, c]) + (int(bias[c]) if bias is not None else 0), m, shift))
    return out


def batch_matmul_s16(a, b_t, m, shift):
    """BATCH_MATMUL int16 on A [rows x depth] and B given transposed [cols x depth]: int64 sums."""
    acc = a.astype(object) @ b_t.T.astype(object)
    return np.vectorize(lambda v: sat16(mbqm64(int(v), m, shift)), otypes=[np.int64])(acc)


def round_half_away(v):
    return F(np.copysign(np.floor(np.abs(v) + F(0.5)), v))


def lut_int16(input_scale, input_zp, output_scale, output_zp, fn):
    """detail::LUTPopulateInt16<float>, vectorized over the 512 steps (each operation float32)."""
    in_min = F(input_scale * F(-32768 - input_zp))
    in_max = F(input_scale * F(32767 - input_zp))
    out_min = F(output_scale * F(-32768 - output_zp))
    out_max = F(output_scale * F(32767 - output_zp))
    step = F(F(in_max - in_min) / F(512))
    half = F(step / F(2))
    inv = F(F(65536) / F(out_max - out_min))
    i = np.arange(512, dtype=F)
    at = (in_min + i * step).astype(F)
    val, mid, nxt = fn(at), fn((at + half).astype(F)), fn((in_min + (i + F(1)) * step).astype(F))
    sample = round_half_away((val * inv).astype(F))
    interp = round_half_away(((nxt * inv).astype(F) + sample) / F(2))
    bias = round_half_away(((interp - round_half_away((mid * inv).astype(F))) / F(2)).astype(F))
    lut = np.clip(sample - bias, -32768, 32767).astype(np.int64)
    last = np.clip(round_half_away((fn(np.array([in_max], dtype=F)) * inv).astype(F)), -32768, 32767)
    return [int(v) for v in lut] + [int(last[0])]


def exp_f32(x):
    return np.exp(x.astype(np.float64)).astype(F)


EXP_LUT = lut_int16(F(F(10) / F(65535)), 32767, F(F(2) / F(65535)), 0, exp_f32)
RECIP_LUT = lut_int16(F(F(1) / F(65535)), -32768, F(F(2) / F(65535)), 0, lambda x: (F(1) / (F(1) + x)).astype(F))


def lut_lookup(value, lut):
    index = 256 + (value >> 7)
    assert 0 <= index < 512
    offset = value & 0x7F
    base = lut[index]
    slope = ((lut[index + 1] - lut[index] + 32768) & 0xFFFF) - 32768  # int16
    return ((base + ((slope * offset + 64) >> 7) + 32768) & 0xFFFF) - 32768


def softmax_params(scale, single, beta=1.0):
    return quantize_multiplier(scale * beta / (10.0 / 65535.0), single)


def softmax_s16(row, params, single):
    """SoftmaxInt16 of one row (a list of ints)."""
    m, shift = params
    mbqm = tflite_single if single else tflite_double
    mx = max(row)
    exps = [lut_lookup(sat16(mbqm(v - mx, m, shift) + 32767), EXP_LUT) for v in row]
    total = sum(exps)
    headroom_plus_one = 32 - total.bit_length()
    shifted_sum = ((total << (headroom_plus_one - 1)) + (1 << 13)) >> 14
    recip = lut_lookup(sat16(shifted_sum - ((1 << 15) + (1 << 16))), RECIP_LUT)
    right_shift = 31 - headroom_plus_one
    out = []
    for e in exps:
        r = wrap32((e * recip + (1 << (right_shift - 1))) >> right_shift)
        out.append(min(max(r, 0), 32767))
    return out


def main():
    rnd = random.Random(20261127)
    lines = ["// SPDX-License-Identifier: Apache-2.0",
             "// Generated by tests/kernels/gen_s16_fixtures.py (TFLite's 16x8 arithmetic in Python). Do not edit.",
             "#pragma once", "#include <cstdint>", '#include "emha/kernels/requant.hpp"', "namespace s16_fixtures {"]
    lines += c_array("exp_lut", EXP_LUT, "std::int16_t")
    lines += c_array("one_over_one_plus_x_lut", RECIP_LUT, "std::int16_t")
    # int64 requantization: multipliers over the contract's shifts, sums over every magnitude.
    req = []
    for _ in range(400):
        real = 2.0 ** rnd.uniform(-38, 7.9)
        m, shift = quantize_multiplier(real)
        if not -31 <= shift < 8:
            continue
        x = int(rnd.choice([1, -1]) * 2 ** rnd.uniform(0, 46.99))
        x = max(min(x, (1 << 47) - 1), -(1 << 47))
        req.append((x, m, shift, mbqm64(x, m, shift)))
    for m in (0, 1 << 30, 0x7FFEFFFF, 0x7FFF0000, (1 << 31) - 1):  # the Q15 rounding's ends
        for x in (1, -1, 12345, -(1 << 40), (1 << 47) - 1, -(1 << 47)):
            req.append((x, m, -20, mbqm64(x, m, -20)))
    lines += c_array("requant_x", [f"std::int64_t({x})" for x, _, _, _ in req], "std::int64_t")
    lines += c_array("requant_q", [f"{{{m}, {s}}}" for _, m, s, _ in req], "emha::QuantizedMultiplier")
    lines += c_array("requant_y", [y for *_, y in req], "std::int32_t")
    # Softmax rows: lengths 1 .. 300, input scales from 1e-4 to 0.05, both roundings; ties and
    # saturated differences included (a row spanning all of int16).
    rows, lengths, params, singles, outs = [], [], [], [], []
    for n in [1, 2, 3, 7, 16, 33, 64, 100, 255, 300] + [rnd.randint(1, 80) for _ in range(10)]:
        for single in (False, True):
            scale = 10 ** rnd.uniform(-4, -1.3)
            spread = rnd.choice([300, 3000, 32767])
            row = [rnd.randint(-spread, spread) for _ in range(n)]
            if n > 3:
                row[1] = row[2] = max(row)  # ties at the maximum
                row[3] = -32768
            p = softmax_params(scale, single)
            rows += row
            lengths.append(n)
            params.append(p)
            singles.append(single)
            outs += softmax_s16(row, p, single)
    lines += c_array("softmax_x", rows, "std::int16_t")
    lines += c_array("softmax_cols", lengths, "std::uint32_t")
    lines += c_array("softmax_params", [f"{{{m}, {s}}}" for m, s in params], "emha::QuantizedMultiplier")
    lines += c_array("softmax_single", ["true" if s else "false" for s in singles], "bool")
    lines += c_array("softmax_y", outs, "std::int16_t")
    lines.append("}  // namespace s16_fixtures")
    OUT.write_text("\n".join(lines) + "\n")
    # The probabilities sum to about 1 (a misread table or shift would not).
    at = 0
    for n in lengths:
        total = sum(outs[at:at + n]) / 32768.0
        assert abs(total - 1.0) < 0.01 + n / 32768.0, total
        at += n
    print(f"{len(req)} requantizations, {len(lengths)} softmax rows")


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: Apache-2.0
"""Generate tests/kernels/fixtures/softmax_s8.hpp: TFLite's reference int8 softmax, re-implemented
in Python from its published code, never from emha's:

  Softmax<int8_t, int8_t>        tensorflow/lite/kernels/internal/reference/softmax.h (tflite-micro
                                 d138bfc): max, Q5.26 differences, exp, Q12.19 sum, reciprocal
  GetReciprocal, MultiplyByQuantizedMultiplierGreaterThanOne
                                 tensorflow/lite/kernels/internal/common.h (both roundings)
  PreprocessSoftmaxScaling, CalculateInputRadius, QuantizeMultiplierGreaterThanOne
                                 tensorflow/lite/kernels/internal/quantization_util.cc, as
                                 tensorflow/lite/micro/kernels/softmax_common.cc calls them
                                 (kScaledDiffIntegerBits 5, beta and the input scale as floats)
  FixedPoint, exp_on_negative_values, one_over_one_plus_x_for_x_in_0_1, Rescale,
  SaturatingRoundingMultiplyByPOT, RoundingHalfSum
                                 gemmlowp fixedpoint/fixedpoint.h (16e8662)

int32 arithmetic is emulated exactly (C's truncating division, two's complement shifts; every
plain addition is checked not to overflow, as the originals assume). Each output is also checked
against float64 softmax(beta * scale * x) to within 1/256 (a misread formula would not be).

Cases: input scales from 1/256 to 1, rows of 1 to 300 keys, random and structured (all equal, one
peak, spreads past diff_min), each with the double- and single-rounding parameters and results.

    /usr/bin/python3 tests/kernels/gen_softmax_s8_fixtures.py      (from the repository root)

Deterministic; overwrites only tests/kernels/fixtures/softmax_s8.hpp.
"""
import math
import pathlib
import random
import sys

import numpy as np

sys.dont_write_bytecode = True
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from gen_requant_fixtures import INT32_MAX, INT32_MIN, c_array, gemmlowp_rdbpot, gemmlowp_srdhm, quantize_multiplier  # noqa: E402
from gen_requant_fixtures import tflite_single, trunc_div, wrap32  # noqa: E402

OUT = pathlib.Path(__file__).resolve().parent / "fixtures" / "softmax_s8.hpp"
SCALED_DIFF_BITS, ACCUM_BITS = 5, 12


def add(a, b):
    """gemmlowp's Add on int32: the originals rely on it not overflowing; so do we, checked."""
    s = a + b
    assert INT32_MIN <= s <= INT32_MAX, (a, b)
    return s


def sub(a, b):
    return add(a, -b)


def srmbpot(x, exponent):
    """SaturatingRoundingMultiplyByPOT<exponent> on int32."""
    if exponent == 0:
        return x
    if exponent < 0:
        return gemmlowp_rdbpot(x, -exponent)
    threshold = (1 << (31 - exponent)) - 1
    if x > threshold:
        return INT32_MAX
    if x < -threshold:
        return INT32_MIN
    return wrap32(x << exponent)


def rescale(x, src_bits, dst_bits):
    return srmbpot(x, src_bits - dst_bits)


def rounding_half_sum(a, b):
    s = a + b
    return trunc_div(s + (1 if s >= 0 else -1), 2)


def exp_quarter(a):
    """exp_on_interval_between_negative_one_quarter_and_0_excl, Q0.31."""
    constant_term, one_third = 1895147668, 715827883
    x = add(a, 1 << 28)
    x2 = gemmlowp_srdhm(x, x)
    x3 = gemmlowp_srdhm(x2, x)
    x4 = gemmlowp_srdhm(x2, x2)
    x4_over_4 = srmbpot(x4, -2)
    poly = srmbpot(add(gemmlowp_srdhm(add(x4_over_4, x3), one_third), x2), -1)
    return add(constant_term, gemmlowp_srdhm(constant_term, add(x, poly)))


def exp_on_negative_values(a, int_bits):
    frac = 31 - int_bits
    one_quarter = 1 << (frac - 2)
    mask = sub(one_quarter, 1)
    a_mod = sub(a & mask, one_quarter)
    result = exp_quarter(rescale(a_mod, int_bits, 0))
    remainder = sub(a_mod, a)
    for exponent, mult in ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308),
                           (2, 39332535), (3, 720401), (4, 242)):
        if int_bits > exponent:
            shift = frac + exponent if int_bits > exponent else 0
            if remainder & (1 << shift):
                result = gemmlowp_srdhm(result, mult)
    if int_bits > 5:
        clamp_b = 36 - int_bits
        if a < -(1 << clamp_b):
            result = 0
    if a == 0:
        result = INT32_MAX  # FixedPoint<int32, 0>::One()
    return result


def one_over_one_plus_x(a):
    """one_over_one_plus_x_for_x_in_0_1, Q0.31 in and out."""
    half_denominator = rounding_half_sum(a, INT32_MAX)
    x = add(1515870810, gemmlowp_srdhm(half_denominator, -1010580540))  # F2
    for _ in range(3):
        half_denominator_times_x = gemmlowp_srdhm(half_denominator, x)    # F0 * F2 = F2
        one_minus = sub(1 << 29, half_denominator_times_x)              # F2::One() - ...
        x = add(x, rescale(gemmlowp_srdhm(x, one_minus), 4, 2))         # F2 * F2 = F4 -> F2
    return rescale(x, 1, 0)  # ExactMulByPot<-1>: F2 -> F1 (same raw), Rescale<0>


def clz32(x):
    return 32 - (x & 0xFFFFFFFF).bit_length()


def get_reciprocal(x, x_integer_digits):
    headroom_plus_one = clz32(x)
    num_bits_over_unit = x_integer_digits - headroom_plus_one
    shifted_sum_minus_one = wrap32(((x & 0xFFFFFFFF) << headroom_plus_one) - (1 << 31))
    return one_over_one_plus_x(shifted_sum_minus_one), num_bits_over_unit


def mul_greater_than_one(x, m, left_shift, single):
    if single:
        return tflite_single(x, m, left_shift)
    return gemmlowp_srdhm(wrap32(x * (1 << left_shift)), m)


def params(beta, input_scale, single):
    """softmax_common.cc's int8 preparation: (input_multiplier, input_left_shift, diff_min)."""
    max_real = (1 << 30) - 1.0 if single else (1 << 31) - 1.0
    real = min(float(np.float32(beta)) * float(np.float32(input_scale)) * (1 << (31 - SCALED_DIFF_BITS)), max_real)
    assert real > 1.0
    m, shift = quantize_multiplier(real, single)
    assert shift >= 0
    radius = math.floor(1.0 * ((1 << SCALED_DIFF_BITS) - 1) * (1 << (31 - SCALED_DIFF_BITS)) / (1 << shift))
    return m, shift, -radius


def softmax_s8(row, prm, single):
    m, shift, diff_min = prm
    mx = max(row)
    total = 0
    for v in row:
        d = v - mx
        if d >= diff_min:
            e = exp_on_negative_values(mul_greater_than_one(d, m, shift, single), SCALED_DIFF_BITS)
            total = add(total, rescale(e, 0, ACCUM_BITS))
    inverse, bits_over_unit = get_reciprocal(total, ACCUM_BITS)
    exponent = bits_over_unit + 31 - 8
    assert 0 <= exponent <= 31
    out = []
    for v in row:
        d = v - mx
        if d >= diff_min:
            e = exp_on_negative_values(mul_greater_than_one(d, m, shift, single), SCALED_DIFF_BITS)
            q = gemmlowp_rdbpot(gemmlowp_srdhm(inverse, e), exponent) - 128
            out.append(max(min(q, 127), -128))
        else:
            out.append(-128)
    return out


def rows_for(rng):
    rows = [[5], [-128, 127], [0] * 7, [100] + [-100] * 15, [127] * 3 + [-128] * 30]
    for n in (2, 3, 5, 8, 16, 17, 33, 64, 100, 300):
        for spread in (4, 32, 255):
            lo = rng.randint(-128, 127 - min(spread, 255))
            rows.append([rng.randint(lo, min(lo + spread, 127)) for _ in range(n)])
    return rows


def main():
    rng = random.Random(26112026)
    scales = [1.0 / 256, 0.02, 0.0625, 0.1, 0.25, 0.6, 1.0]
    cases, pool, out_d, out_s = [], [], [], []
    worst = 0.0
    for scale in scales:
        pd, ps = params(1.0, scale, False), params(1.0, scale, True)
        for row in rows_for(rng):
            yd, ys = softmax_s8(row, pd, False), softmax_s8(row, ps, True)
            z = np.exp(float(np.float32(scale)) * (np.array(row, dtype=np.float64) - max(row)))
            p = z / z.sum()
            for y in (yd, ys):
                err = np.max(np.abs((np.array(y) + 128) / 256.0 - p))
                worst = max(worst, err)
                assert err <= 1.0 / 256, (scale, row, y, p)
            cases.append((pd, ps, len(pool), len(row)))
            pool += row
            out_d += yd
            out_s += ys
    parted = sum(a != b for a, b in zip(out_d, out_s))


    lines = [
        "// SPDX-License-Identifier: Apache-2.0",
        "// Generated by tests/kernels/gen_softmax_s8_fixtures.py (TFLite's reference int8 softmax",
        "// re-implemented in Python). Do not edit.",
        "#pragma once",
        "#include <cstdint>",
        "#include \"emha/kernels/softmax_s8_ref.hpp\"",
        "namespace emha::softmax_s8_fixtures {",
        "struct Case {",
        "  SoftmaxS8Params double_rounding, single_rounding;  // the exporter's parameters for each build",
        "  unsigned offset, cols;                             // the row: input[offset .. offset + cols)",
        "};",
        "inline constexpr Case cases[] = {",
    ]
    for pd, ps, off, n in cases:
        lines.append(f"    {{{{{pd[0]}, {pd[1]}, {pd[2]}}}, {{{ps[0]}, {ps[1]}, {ps[2]}}}, {off}, {n}}},")
    lines += ["};"]
    lines += c_array("input", pool, "std::int8_t")
    lines += c_array("double_rounding", out_d, "std::int8_t")
    lines += c_array("single_rounding", out_s, "std::int8_t")
    # The fixed-point pieces alone, raw: exp over Q5.26 (0 down past -32) and the reciprocal of
    # Q12.19 sums (1 up to the largest a row of 4096 keys reaches).
    exp_in = [0, -1, -2, -(1 << 24), -(1 << 26), -(1 << 27) - 12345, -(1 << 31)]
    exp_in += [-rng.randint(1, (1 << 31) - 1) for _ in range(200)]
    exp_in += [-rng.randint(1, 1 << 27) for _ in range(100)]
    recip_in = [1 << 19, (1 << 19) + 1, 3 << 19, INT32_MAX] + [rng.randint(1 << 19, INT32_MAX) for _ in range(200)]
    lines += ["struct Raw {", "  std::int32_t in, out;", "  int bits;  // the reciprocal's bits over unit", "};",
              "inline constexpr Raw exp_q5[] = {"]
    for a in exp_in:
        lines.append(f"    {{{a}, {exp_on_negative_values(a, SCALED_DIFF_BITS)}, 0}},".replace(str(INT32_MIN), "INT32_MIN"))
    lines += ["};", "inline constexpr Raw reciprocal_q12[] = {"]
    for x in recip_in:
        r, bits = get_reciprocal(x, ACCUM_BITS)
        lines.append(f"    {{{x}, {r}, {bits}}},")
    lines += ["};"]
    lines += [f"inline constexpr unsigned parted = {parted};  // outputs where the two roundings differ",
              f"// max |(y + 128) / 256 - float64 softmax| over both: {worst:.3e}",
              "}  // namespace emha::softmax_s8_fixtures", ""]
    OUT.write_text("\n".join(lines))
    print(f"{OUT}: {len(cases)} rows, {len(pool)} values, {parted} outputs where the roundings differ, "
          f"max |dequantized - float64 softmax| {worst:.3e} (1/256 = {1 / 256:.3e})")


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: Apache-2.0
"""Generate tests/kernels/fixtures/requant.hpp: fixed-point requantization cases computed by an
independent Python re-implementation of TFLite's and CMSIS-NN's integer arithmetic, never from
emha's code:

  QuantizeMultiplier                 tensorflow/lite/kernels/internal/quantization_util.cc
                                     (std::frexp, TfLiteRound = round half away from zero)
  MultiplyByQuantizedMultiplier      tensorflow/lite/kernels/internal/common.cc (tflite-micro
                                     2e50943, 2023): double rounding (default) and
                                     TFLITE_SINGLE_ROUNDING
  SaturatingRoundingDoublingHighMul, gemmlowp fixedpoint/fixedpoint.h (as TFLite includes it):
  RoundingDivideByPOT                the nudge-and-truncating-division form and the mask form
  arm_nn_requantize                  CMSIS-NN Include/arm_nnsupportfunctions.h (v6): the same two
                                     roundings, written differently (checked equal here)

Each case: an int32 x, a (multiplier, shift) pair, TFLite's double-rounding result and, where
TFLite's single-rounding contract holds (shift in [-31, 30], the result an int32), its
single-rounding result. Inputs: multipliers from QuantizeMultiplier over reals from 2^-40 to 2^10
and the extremes (0, 2^30, 2^31 - 1), accumulators over every magnitude, the int32 ends, and ties
(x odd against 0.5 and 0.75 multipliers), where the two roundings part.

    /usr/bin/python3 tests/kernels/gen_requant_fixtures.py      (from the repository root)

Deterministic; overwrites only tests/kernels/fixtures/requant.hpp.
"""
import math
import pathlib
import random

OUT = pathlib.Path(__file__).resolve().parent / "fixtures" / "requant.hpp"
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def wrap32(v):
    """Two's complement int32 of an integer (what an int32 multiply leaves on the hardware)."""
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def trunc_div(a, b):
    """C's integer division: the quotient truncated toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def tflite_round(v):
    """TfLiteRound (std::round): half away from zero."""
    return math.floor(v + 0.5) if v >= 0 else -math.floor(-v + 0.5)


def quantize_multiplier(real, single_rounding=False):
    """TFLite's QuantizeMultiplier: (Q31 multiplier, shift) with real = m * 2^(shift - 31)."""
    if real == 0.0:
        return 0, 0
    q, shift = math.frexp(real)
    q_fixed = int(tflite_round(q * (1 << 31)))
    assert q_fixed <= 1 << 31
    if q_fixed == 1 << 31:
        q_fixed //= 2
        shift += 1
    assert q_fixed <= INT32_MAX
    if shift < -31:
        shift, q_fixed = 0, 0
    if single_rounding and shift > 30:
        shift, q_fixed = 30, (1 << 31) - 1
    return q_fixed, shift


def gemmlowp_srdhm(a, b):
    """gemmlowp SaturatingRoundingDoublingHighMul (int32)."""
    overflow = a == b == INT32_MIN
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else (1 - (1 << 30))
    high = trunc_div(ab + nudge, 1 << 31)
    return INT32_MAX if overflow else high


def gemmlowp_rdbpot(x, exponent):
    """gemmlowp RoundingDivideByPOT (int32): the mask and threshold form."""
    mask = (1 << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if remainder > threshold else 0)


def tflite_double(x, m, shift):
    left, right = max(shift, 0), max(-shift, 0)
    return gemmlowp_rdbpot(gemmlowp_srdhm(wrap32(x * (1 << left)), m), right)


def tflite_single(x, m, shift):
    total = 31 - shift
    return (x * m + (1 << (total - 1))) >> total


def cmsis_double(x, m, shift):
    """arm_nn_requantize's default branch (arm_nn_doubling_high_mult_no_sat, divide_by_power_of_two)."""
    left, right = max(shift, 0), max(-shift, 0)
    prod = wrap32(x * (1 << left)) * m + (1 << 30)
    high = wrap32(prod >> 31)
    mask = (1 << right) - 1
    result = high >> right
    threshold = (mask >> 1) + (1 if result < 0 else 0)
    return result + (1 if (mask & high) > threshold else 0)


def cmsis_single(x, m, shift):
    """arm_nn_requantize's CMSIS_NN_USE_SINGLE_ROUNDING branch: None where its int32
    intermediate (twice the result) overflows and it parts from TFLite's."""
    total = 31 - shift
    half = (x * m) >> (total - 1)
    if not INT32_MIN <= half < INT32_MAX:
        return None
    return (half + 1) >> 1


def c_array(name, values, ctype):
    """A generated header's `inline constexpr ctype name[]`, 24 values a line."""
    body = ["    " + ", ".join(str(v) for v in values[i:i + 24]) + "," for i in range(0, len(values), 24)]
    return [f"inline constexpr {ctype} {name}[] = {{"] + body + ["};"]


def cases():
    rng = random.Random(20261126)
    multipliers = [(0, 0), (1 << 30, 0), (1 << 30, -1), ((1 << 31) - 1, 0), ((1 << 31) - 1, -31),
                   ((1 << 31) - 1, 30), (1 << 30, 30), (1 << 30, -31), (3 << 29, -1), (3 << 29, -4)]
    for _ in range(60):
        real = 2.0 ** rng.uniform(-40, 10)
        multipliers.append(quantize_multiplier(real))
    multipliers.append(quantize_multiplier(1.0))   # (2^30, 1)
    multipliers.append(quantize_multiplier(0.5))   # (2^30, 0)
    xs = [0, 1, -1, 2, -2, 3, -3, INT32_MAX, INT32_MIN, INT32_MIN + 1, 1 << 30, -(1 << 30),
          (1 << 16) + 1, -(1 << 16) - 1]
    out = []
    for m, shift in multipliers:
        left = max(shift, 0)
        pool = list(xs) + [rng.randint(-(1 << bits), 1 << bits) for bits in (4, 8, 12, 16, 20, 24, 28, 30)
                           for _ in range(2)]
        for x in pool:
            if left and not -(1 << 31) <= x * (1 << left) <= INT32_MAX:
                x = rng.randint(-(1 << (31 - left)), (1 << (31 - left)) - 1)  # TFLite: no overflow
            out.append((x, m, shift))
    for x in range(-40, 41):  # ties: x / 2 and 3 x / 4 exactly halfway before the right shift
        for m, shift in ((1 << 30, -1), (1 << 30, -3), (3 << 29, -2), (3 << 29, -5), (1 << 30, -31)):
            out.append((x, m, shift))
    return out


def main():
    rows, parted = [], 0
    for x, m, shift in cases():
        d = tflite_double(x, m, shift)
        assert d == cmsis_double(x, m, shift), (x, m, shift)
        s = tflite_single(x, m, shift)
        single_ok = -31 <= shift <= 30 and INT32_MIN <= s <= INT32_MAX
        if single_ok:
            assert cmsis_single(x, m, shift) in (s, None), (x, m, shift)
            parted += s != d
        rows.append((x, m, shift, d, s if single_ok else 0, single_ok))
    srdhm = [(INT32_MIN, INT32_MIN), (INT32_MIN, INT32_MAX), (INT32_MAX, INT32_MAX), (-1, 1 << 30), (1, 1 << 30),
             (-3, 1 << 30), (3, 1 << 30), (12345, -(1 << 30)), (INT32_MIN, 1 << 30)]
    lines = [
        "// SPDX-License-Identifier: Apache-2.0",
        "// Generated by tests/kernels/gen_requant_fixtures.py (TFLite's and CMSIS-NN's integer",
        "// requantization re-implemented in Python). Do not edit.",
        "#pragma once",
        "#include <cstdint>",
        "namespace emha::requant_fixtures {",
        "struct Case {",
        "  std::int32_t x, multiplier, shift;",
        "  std::int32_t double_rounding, single_rounding;  // TFLite's results",
        "  bool single_valid;                             // shift and result within TFLite's single-rounding contract",
        "};",
        f"inline constexpr unsigned parted = {parted};  // cases where the two roundings differ",
        "inline constexpr Case cases[] = {",
    ]
    for x, m, shift, d, s, ok in rows:
        lines.append(f"    {{{x}, {m}, {shift}, {d}, {s}, {'true' if ok else 'false'}}},".replace(
            str(INT32_MIN), "INT32_MIN"))
    lines += ["};", "struct Srdhm {", "  std::int32_t a, b, out;", "};", "inline constexpr Srdhm srdhm[] = {"]
    for a, b in srdhm:
        lines.append(f"    {{{a}, {b}, {gemmlowp_srdhm(a, b)}}},".replace(str(INT32_MIN), "INT32_MIN"))
    lines += ["};", "}  // namespace emha::requant_fixtures", ""]
    OUT.write_text("\n".join(lines))
    print(f"{OUT}: {len(rows)} cases, {parted} where double and single rounding differ")


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: Apache-2.0
"""Generate tests/kernels/fixtures/matmul_s8.hpp: TFLite's reference int8 FULLY_CONNECTED (per
channel) and BATCH_MATMUL, re-implemented in Python from their published code, never from
emha's:

  FullyConnectedPerChannel   tensorflow/lite/kernels/internal/reference/integer_ops/fully_connected.h
                             (acc += filter * (input + input_offset); + bias; per-channel
                             MultiplyByQuantizedMultiplier; + output_offset; clamp)
  BatchMatMul<int8_t, int32_t>  tensorflow/lite/kernels/internal/reference/batch_matmul.h (tflite-micro
                             d138bfc), called as tensorflow/lite/micro/kernels/batch_matmul.cc does:
                             the op's right-hand side (transposed) as the kernel's lhs with
                             weights_offset = -its zero point, the op's lhs as the kernel's rhs with
                             input_offset = -its zero point, the output written at lhs_rows * j + i
  MultiplyByQuantizedMultiplier, QuantizeMultiplier: gen_requant_fixtures.py (both roundings)

Scales are a layer's: activations per tensor with a zero point, weights per output channel
(amax / 127), int32 biases at s_x s_w; the multipliers are s_x s_w / s_y (per tensor for
BATCH_MATMUL: s_a s_b / s_c). Every output is also checked to be within one output step of the
float64 product of the dequantized operands (a misread formula would not be).

    /usr/bin/python3 tests/kernels/gen_matmul_s8_fixtures.py      (from the repository root)

Deterministic; overwrites only tests/kernels/fixtures/matmul_s8.hpp.
"""
import pathlib
import random
import sys

import numpy as np

sys.dont_write_bytecode = True
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from gen_requant_fixtures import INT32_MAX, INT32_MIN, c_array, quantize_multiplier, tflite_double, tflite_single  # noqa: E402

OUT = pathlib.Path(__file__).resolve().parent / "fixtures" / "matmul_s8.hpp"


def requant(acc, m, shift, single):
    assert INT32_MIN <= acc <= INT32_MAX
    return tflite_single(acc, m, shift) if single else tflite_double(acc, m, shift)


def fully_connected_per_channel(x, w, bias, mults, zp_x, zp_y, single):
    batches, accum_depth = x.shape
    output_depth = w.shape[0]
    input_offset = -zp_x
    out = np.zeros((batches, output_depth), dtype=np.int64)
    for b in range(batches):
        for out_c in range(output_depth):
            acc = 0
            for d in range(accum_depth):
                acc += int(w[out_c, d]) * (int(x[b, d]) + input_offset)
            acc += int(bias[out_c])
            m, shift = mults[out_c]
            v = requant(acc, m, shift, single) + zp_y
            out[b, out_c] = min(max(v, -128), 127)
    return out


def batch_matmul_op(a, b_t, zp_a, zp_b, m, shift, zp_c, single):
    """The BATCH_MATMUL op on A [rows x depth] and B given transposed [cols x depth]."""
    lhs, rhs = b_t, a                      # the kernel's operands, as the micro op passes them
    filter_offset, input_offset = -zp_b, -zp_a
    lhs_rows, accum_depth = lhs.shape
    rhs_cols = rhs.shape[0]
    out = np.zeros(lhs_rows * rhs_cols, dtype=np.int64)
    for j in range(rhs_cols):
        for i in range(lhs_rows):
            total = 0
            for k in range(accum_depth):
                total += (int(lhs[i, k]) + filter_offset) * (int(rhs[j, k]) + input_offset)
            v = requant(total, m, shift, single) + zp_c
            out[lhs_rows * j + i] = min(max(v, -128), 127)
    return out.reshape(rhs_cols, lhs_rows)


def quantize(v, scale, zp):
    return np.clip(np.round(v / scale) + zp, -128, 127).astype(np.int64)


def main():
    rng = np.random.default_rng(20261126)
    fc_cases, bmm_cases = [], []
    pool8, pool32, mult_pool, out_d, out_s = [], [], [], [], []

    def put8(arr):
        off = len(pool8)
        pool8.extend(int(v) for v in arr.ravel())
        return off

    def put_out(d, s):
        off = len(out_d)
        out_d.extend(int(v) for v in d.ravel())
        out_s.extend(int(v) for v in s.ravel())
        return off

    for (m, n, k, zp_x, zp_y) in ((1, 8, 16, 0, 0), (3, 17, 33, -7, 5), (5, 64, 64, 12, -3), (2, 7, 200, -128, 0),
                                  (4, 32, 96, 3, 127)):
        xf = rng.normal(0, 1, (m, k))
        wf = rng.normal(0, 0.2, (n, k)) * rng.uniform(0.1, 3, (n, 1))
        bf = rng.normal(0, 0.5, n)
        s_x = float(np.float32((xf.max() - xf.min()) / 255))
        s_w = np.abs(wf).max(axis=1) / 127
        x = quantize(xf, s_x, zp_x)
        w = np.clip(np.round(wf / s_w[:, None]), -127, 127).astype(np.int64)
        bias = np.round(bf / (s_x * s_w)).astype(np.int64)
        yf = (x - zp_x) * s_x @ (w * s_w[:, None]).T + bias * s_x * s_w
        s_y = float((yf.max() - yf.min()) / 255)
        mults = [quantize_multiplier(s_x * s_w[j] / s_y) for j in range(n)]
        yd = fully_connected_per_channel(x, w, bias, mults, zp_x, zp_y, False)
        ys = fully_connected_per_channel(x, w, bias, mults, zp_x, zp_y, True)
        for y in (yd, ys):  # within one step of the float64 product, or saturated
            exact = yf / s_y + zp_y
            ok = (np.abs(y - exact) <= 1.0) | ((y == 127) & (exact > 127)) | ((y == -128) & (exact < -128))
            assert ok.all(), (m, n, k)
        fc_cases.append((m, n, k, zp_x, zp_y, put8(x), put8(w), len(pool32), len(mult_pool), put_out(yd, ys)))
        pool32.extend(int(v) for v in bias)
        mult_pool.extend(mults)

    for (m, n, k, zp_a, zp_b, zp_c) in ((4, 9, 8, 0, 0, 0), (7, 7, 16, -5, 3, -2), (3, 33, 64, 20, -17, 10),
                                        (1, 300, 32, -128, 0, -128), (6, 16, 24, 127, -128, 7)):
        af = rng.normal(0, 1, (m, k))
        bf = rng.normal(0, 1, (n, k))
        s_a = float((af.max() - af.min()) / 255)
        s_b = float((bf.max() - bf.min()) / 255)
        a, b = quantize(af, s_a, zp_a), quantize(bf, s_b, zp_b)
        cf = ((a - zp_a) * s_a) @ ((b - zp_b) * s_b).T
        s_c = float((cf.max() - cf.min()) / 255)
        mult = quantize_multiplier(s_a * s_b / s_c)
        cd = batch_matmul_op(a, b, zp_a, zp_b, *mult, zp_c, False)
        cs = batch_matmul_op(a, b, zp_a, zp_b, *mult, zp_c, True)
        for c in (cd, cs):
            exact = cf / s_c + zp_c
            ok = (np.abs(c - exact) <= 1.0) | ((c == 127) & (exact > 127)) | ((c == -128) & (exact < -128))
            assert ok.all(), (m, n, k)
        bmm_cases.append((m, n, k, zp_a, zp_b, zp_c, put8(a), put8(b), mult, put_out(cd, cs)))

    parted = sum(d != s for d, s in zip(out_d, out_s))


    lines = [
        "// SPDX-License-Identifier: Apache-2.0",
        "// Generated by tests/kernels/gen_matmul_s8_fixtures.py (TFLite's reference int8",
        "// FULLY_CONNECTED and BATCH_MATMUL re-implemented in Python). Do not edit.",
        "#pragma once",
        "#include <cstdint>",
        "#include \"emha/kernels/requant.hpp\"",
        "namespace emha::matmul_s8_fixtures {",
        "struct FullyConnected {",
        "  unsigned m, n, k;",
        "  std::int32_t zero_point_x, zero_point_y;",
        "  unsigned x, w, bias, multipliers, out;  // offsets: x [m x k] and w [n x k] in int8s, bias and",
        "};                                       // multipliers [n], out [m x n] in the outputs",
        "struct BatchMatmul {",
        "  unsigned m, n, k;",
        "  std::int32_t zero_point_a, zero_point_b, zero_point_c;",
        "  unsigned a, b;  // a [m x k], b [n x k] (the right-hand side transposed) in int8s",
        "  QuantizedMultiplier multiplier;",
        "  unsigned out;  // c [m x n] in the outputs",
        "};",
        "inline constexpr FullyConnected fully_connected[] = {",
    ]
    for c in fc_cases:
        lines.append("    {" + ", ".join(str(v) for v in c) + "},")
    lines += ["};", "inline constexpr BatchMatmul batch_matmul[] = {"]
    for (m, n, k, za, zb, zc, oa, ob, (mm, sh), oo) in bmm_cases:
        lines.append(f"    {{{m}, {n}, {k}, {za}, {zb}, {zc}, {oa}, {ob}, {{{mm}, {sh}}}, {oo}}},")
    lines += ["};"]
    lines += c_array("int8s", pool8, "std::int8_t")
    lines += c_array("biases", pool32, "std::int32_t")
    lines += ["inline constexpr QuantizedMultiplier multipliers[] = {"]
    lines += [f"    {{{mm}, {sh}}}," for mm, sh in mult_pool] + ["};"]
    lines += c_array("double_rounding", out_d, "std::int8_t")
    lines += c_array("single_rounding", out_s, "std::int8_t")
    lines += [f"inline constexpr unsigned parted = {parted};  // outputs where the two roundings differ",
              "}  // namespace emha::matmul_s8_fixtures", ""]
    OUT.write_text("\n".join(lines))
    print(f"{OUT}: {len(fc_cases)} fully connected and {len(bmm_cases)} batch matmul cases, {len(out_d)} outputs, "
          f"{parted} where the roundings differ")


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: Apache-2.0
"""Reads an emha weight blob back in Python (lib/include/emha/io/weight_blob.hpp, versions 2,
3 and 5): the test side's check of lib/export/emha_export.py's writer, independent of it. Shared by
gen_roundtrip.py and test_export_errors.py."""
import struct
import zlib

import numpy as np

FIELDS = ["magic", "version", "total_bytes", "crc32", "header_bytes", "dtype", "layout", "d_model",
          "heads", "kv_heads", "kdim", "vdim", "bias", "position", "rope_pairing", "rope_dims",
          "rope_base", "xpos_scale_base", "sliding_window", "norm", "norm_kind", "norm_eps",
          "norm_affine", "tensor_count", "ref_rows", "ref_causal",
          # version 2, offsets 104-139 (140-159 reserved)
          "head_dim", "scale", "qk_norm", "qk_norm_unit_offset", "qk_norm_eps", "head_split",
          "relative_buckets", "relative_max_distance", "relative_bidirectional"]
# f32 at offsets 64, 68, 84, 108, 120
FLOAT_FIELDS = {"rope_base", "xpos_scale_base", "norm_eps", "scale", "qk_norm_eps"}
HEADER_BYTES = 160
INT8_IDS = range(18, 23)   # in_proj, q, k, v, out_proj weight as int8 (version 3)
SCALE_IDS = range(24, 29)  # their float32 scales [rows, 1]


def read_blob(data):
    """(header fields, {tensor id: array [rows, cols]}); float32, int8 for the int8 weight ids;
    h["weight_type"] is 0 (float) or 1 (int8). AssertionError names what is wrong."""
    assert len(data) >= HEADER_BYTES, f"{len(data)} bytes: shorter than the {HEADER_BYTES}-byte header"
    fmt = "<4s" + "".join("f" if f in FLOAT_FIELDS else "I" for f in FIELDS[1:])
    h = dict(zip(FIELDS, struct.unpack_from(fmt, data, 0)))
    assert h["magic"] == b"EMHA", h["magic"]
    assert h["version"] in (2, 3, 5), h["version"]
    assert h["total_bytes"] == len(data), (h["total_bytes"], len(data))
    crc = zlib.crc32(data[16:]) & 0xFFFFFFFF
    assert h["crc32"] == crc, f"crc32 {h['crc32']:#010x}, the bytes give {crc:#010x}"
    header = 176 if h["version"] == 5 else HEADER_BYTES
    assert h["header_bytes"] == header and h["dtype"] == 1 and h["layout"] == 0, h
    h["weight_type"] = struct.unpack_from("<I", data, 140)[0] if h["version"] >= 3 else 0
    # version 5: arithmetic 0 and rounding 0 at 144 and 148, the RoPE scaling at 152 and 156, the
    # soft cap at 160, zeros to 176
    h["rope_scaling"], h["rope_scaling_crc"], h["softcap"] = struct.unpack_from("<2If", data, 152) \
        if h["version"] == 5 else (0, 0, 0.0)
    reserved = {2: 140, 3: 144, 5: 164}[h["version"]]
    assert data[reserved:header] == bytes(header - reserved), \
        f"reserved bytes from {reserved} are not zero"
    if h["version"] == 5:
        assert data[144:152] == bytes(8), "version 5: arithmetic and rounding are not zero"
    assert h["weight_type"] in (0, 1), f"weight_type {h['weight_type']}"
    if h["version"] == 3:  # the exporter writes version 2 for float weights
        assert h["weight_type"] == 1, "a version 3 blob of float weights"
    if h["version"] == 5:  # written only for a scaled RoPE or a soft cap
        assert h["softcap"] > 0 or (h["position"] == 1 and h["rope_scaling"] in range(1, 6)), \
            f"version 5 without a RoPE scaling or soft cap: position {h['position']}, {h['rope_scaling']}"
    assert h["head_dim"] > 0, "head_dim 0 (the writer resolves it)"
    if h["qk_norm"] == 0:
        assert h["qk_norm_unit_offset"] == 0 and h["qk_norm_eps"] == 0, h
    if h["position"] != 4:
        assert h["relative_buckets"] == h["relative_max_distance"] == 0, h
    tensors, last = {}, 0
    for i in range(h["tensor_count"]):
        tid, rows, cols, offset = struct.unpack_from("<4I", data, header + 16 * i)
        assert tid > last, f"table entry {i}: id {tid} after {last} (ids ascend, no repeats)"
        assert offset % 64 == 0, f"tensor {tid} at offset {offset}: not a multiple of 64"
        assert offset >= header + 16 * h["tensor_count"], f"tensor {tid} overlaps the table"
        int8 = tid in INT8_IDS
        if tid in INT8_IDS or tid in SCALE_IDS:
            assert h["weight_type"] == 1, f"tensor {tid}: an int8 id in a blob of float weights"
        else:
            assert not (h["weight_type"] == 1 and tid in (1, 2, 3, 4, 6)), \
                f"tensor {tid}: a float weight in a blob of int8 weights"
        assert offset + (1 if int8 else 4) * rows * cols <= len(data), \
            f"tensor {tid} runs past total_bytes"
        tensors[tid] = np.frombuffer(data, "i1" if int8 else "<f4", rows * cols,
                                     offset).reshape(rows, cols)
        if int8:
            assert (tensors[tid] != -128).all(), f"tensor {tid} holds -128"
        if tid in SCALE_IDS:
            assert cols == 1 and np.isfinite(tensors[tid]).all() and (tensors[tid] > 0).all(), \
                f"tensor {tid}: scales not finite and > 0, or not [rows, 1]"
        last = tid
    return h, tensors

# SPDX-License-Identifier: Apache-2.0
"""Reads an emha weight blob back in Python (lib/include/emha/io/weight_blob.hpp, version 2): the
test side's check of lib/export/emha_export.py's writer, independent of it. Shared by
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


def read_blob(data):
    """(header fields, {tensor id: float32 array [rows, cols]}); AssertionError names what is wrong."""
    assert len(data) >= HEADER_BYTES, f"{len(data)} bytes: shorter than the {HEADER_BYTES}-byte header"
    fmt = "<4s" + "".join("f" if f in FLOAT_FIELDS else "I" for f in FIELDS[1:])
    h = dict(zip(FIELDS, struct.unpack_from(fmt, data, 0)))
    assert h["magic"] == b"EMHA", h["magic"]
    assert h["version"] == 2, h["version"]
    assert h["total_bytes"] == len(data), (h["total_bytes"], len(data))
    crc = zlib.crc32(data[16:]) & 0xFFFFFFFF
    assert h["crc32"] == crc, f"crc32 {h['crc32']:#010x}, the bytes give {crc:#010x}"
    assert h["header_bytes"] == HEADER_BYTES and h["dtype"] == 1 and h["layout"] == 0, h
    assert data[140:HEADER_BYTES] == bytes(20), "reserved bytes 140-159 are not zero"
    assert h["head_dim"] > 0, "head_dim 0 (the writer resolves it)"
    if h["qk_norm"] == 0:
        assert h["qk_norm_unit_offset"] == 0 and h["qk_norm_eps"] == 0, h
    if h["position"] != 4:
        assert h["relative_buckets"] == h["relative_max_distance"] == 0, h
    tensors, last = {}, 0
    for i in range(h["tensor_count"]):
        tid, rows, cols, offset = struct.unpack_from("<4I", data, HEADER_BYTES + 16 * i)
        assert tid > last, f"table entry {i}: id {tid} after {last} (ids ascend, no repeats)"
        assert offset % 64 == 0, f"tensor {tid} at offset {offset}: not a multiple of 64"
        assert offset >= HEADER_BYTES + 16 * h["tensor_count"], f"tensor {tid} overlaps the table"
        assert offset + 4 * rows * cols <= len(data), f"tensor {tid} runs past total_bytes"
        tensors[tid] = np.frombuffer(data, "<f4", rows * cols, offset).reshape(rows, cols)
        last = tid
    return h, tensors

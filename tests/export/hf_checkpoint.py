# SPDX-License-Identifier: Apache-2.0
"""Hugging Face model folders for the exporter's tests, written with the standard library:
config.json and model.safetensors (an 8-byte little-endian header length, a JSON header with each
tensor's dtype, shape and data_offsets, then the raw little-endian data), or pytorch_model.bin
(torch.save of the state_dict, as older Hub checkpoints are)."""
import json
import pathlib
import struct

import torch

DTYPES = {torch.float32: ("F32", "<f4"), torch.float16: ("F16", "<f2"), torch.float64: ("F64", "<f8"),
          torch.bool: ("BOOL", "?"), torch.int8: ("I8", "i1")}


def tensor_bytes(t, dtype):
    """(safetensors dtype, little-endian bytes) of t; dtype "BF16" keeps float32's top 16 bits
    (t must be exactly representable)."""
    t = t.detach().contiguous().cpu()
    if dtype == "BF16":
        bits = t.to(torch.float32).numpy().view("<u4") >> 16
        return "BF16", bits.astype("<u2").tobytes()
    name, np_dtype = DTYPES[t.dtype if dtype is None else dtype]
    return name, t.to(dtype or t.dtype).numpy().astype(np_dtype).tobytes()


def write_safetensors(path, tensors, dtypes=None):
    """tensors: name -> torch tensor; dtypes: name -> torch.float16 / "BF16" (default: its own)."""
    dtypes = dtypes or {}
    header, body = {"__metadata__": {"format": "pt"}}, bytearray()
    for name, t in tensors.items():
        dtype, data = tensor_bytes(t, dtypes.get(name))
        header[name] = {"dtype": dtype, "shape": list(t.shape),
                        "data_offsets": [len(body), len(body) + len(data)]}
        body += data
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % 8)  # the data 8-byte aligned, as the reference writer does
    pathlib.Path(path).write_bytes(struct.pack("<Q", len(text)) + text + bytes(body))


def write_folder(folder, config, tensors, fmt="safetensors"):
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    if fmt == "safetensors":
        write_safetensors(folder / "model.safetensors", tensors)
    else:
        torch.save(dict(tensors), folder / "pytorch_model.bin")
    return folder

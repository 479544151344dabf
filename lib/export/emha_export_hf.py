# SPDX-License-Identifier: Apache-2.0
"""Part of emha_export.py: checkpoints as users have them, and Hugging Face's config.json.

load_checkpoint: a Hugging Face model folder (config.json + model.safetensors, a sharded
model.safetensors.index.json, or pytorch_model.bin), a .safetensors file (read here with the
standard library and numpy: an 8-byte little-endian header length, a JSON header, raw little-endian
data), or a .pt/.bin file through torch.load(weights_only=True); a whole pickled module only with
--allow-pickle. layer_prefix: --layer N by the families' naming. HfConfig: what config.json says
about one attention layer, and what emha cannot express, refused by name.
"""
import json
import mmap
import pathlib
import re
from collections.abc import Mapping

import numpy as np
import torch

from emha_export_read import fail

# safetensors dtype -> numpy dtype (BF16 is read as its 16 bits and widened to float32)
ST_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2", "I64": "<i8", "I32": "<i4",
             "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "?"}


class SafeTensors(Mapping):
    """The tensors of one .safetensors file by name, each read on first use (mmap; float types as
    float32, others as their integer or bool type)."""

    def __init__(self, path):
        self.path = path
        size = path.stat().st_size
        with open(path, "rb") as f:
            self.map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        if size < 8:
            fail(f"{path}: {size} bytes, not a safetensors file (8-byte header length missing)")
        n = int.from_bytes(self.map[:8], "little")
        if n > size - 8:
            fail(f"{path}: header length {n} exceeds the file's {size - 8} bytes after it")
        raw = bytes(self.map[8:8 + n])
        try:
            header = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            fail(f"{path}: the safetensors header is not JSON ({e})")
        if not isinstance(header, dict):
            fail(f"{path}: the safetensors header is not a JSON object")
        header.pop("__metadata__", None)
        self.start, self.entries = 8 + n, {}
        for name, e in header.items():
            try:
                dtype, shape, (begin, end) = e["dtype"], [int(s) for s in e["shape"]], e["data_offsets"]
            except (KeyError, TypeError, ValueError):
                fail(f"{path}: {name}: no dtype, shape and data_offsets in the header")
            if dtype not in ST_DTYPES:
                fail(f"{path}: {name} has dtype {dtype}; readable: {', '.join(ST_DTYPES)}")
            count = int(np.prod(shape)) if shape else 1
            if end - begin != count * np.dtype(ST_DTYPES[dtype]).itemsize or begin < 0 or \
                    self.start + end > size:
                fail(f"{path}: {name} ({dtype} {shape}) has data_offsets [{begin}, {end}], which "
                     f"do not fit its size or the file's {size - self.start} data bytes")
            self.entries[name] = (dtype, shape, begin, count)

    def __getitem__(self, name):
        dtype, shape, begin, count = self.entries[name]
        a = np.frombuffer(self.map, dtype=ST_DTYPES[dtype], count=count, offset=self.start + begin)
        if dtype == "BF16":
            a = (a.astype(np.uint32) << 16).view(np.float32)
        elif dtype in ("F16", "F64"):
            a = a.astype(np.float32)
        return torch.from_numpy(a.astype(a.dtype.newbyteorder("="), copy=True)).reshape(shape)

    def __iter__(self):
        return iter(self.entries)

    def __len__(self):
        return len(self.entries)


class Sharded(Mapping):
    """model.safetensors.index.json: each tensor from the shard its weight_map names."""

    def __init__(self, index):
        try:
            weight_map = json.loads(index.read_text())["weight_map"]
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            fail(f"{index}: not a safetensors index (no weight_map: {e})")
        shards = {f: SafeTensors(index.parent / f) for f in sorted(set(weight_map.values()))}
        self.where = {n: shards[f] for n, f in weight_map.items()}

    def __getitem__(self, name):
        return self.where[name][name]

    def __iter__(self):
        return iter(self.where)

    def __len__(self):
        return len(self.where)


def torch_load(path, allow_pickle):
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # pickle.UnpicklingError (a module, or other objects), or not a pickle
        if allow_pickle:
            return torch.load(path, map_location="cpu", weights_only=False)
        text = str(e).strip()
        why = text.splitlines()[0].split(". ")[0][:120] if text else type(e).__name__
        fail(f"{path}: torch.load(weights_only=True) refuses it ({why}); a whole pickled module "
             "is loaded only with --allow-pickle, which runs code from the file: use it only on "
             "files you trust, or save the module's state_dict() instead")


HF_WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")


def load_checkpoint(path, allow_pickle, config_path=None):
    """(state: name -> tensor mapping, or the unpickled object; config dict or None; config path;
    the file read)."""
    path = pathlib.Path(path)
    if not path.exists():
        fail(f"{path}: no such file or folder")
    config_file = pathlib.Path(config_path) if config_path else None
    if path.is_dir():
        found = [path / f for f in HF_WEIGHTS if (path / f).is_file()]
        if not found:
            fail(f"{path}: a folder without {', '.join(HF_WEIGHTS)} (a Hugging Face model folder "
                 "holds one of them and config.json)")
        if config_file is None and (path / "config.json").is_file():
            config_file = path / "config.json"
        path = found[0]
    config = None
    if config_file is not None:
        try:
            config = json.loads(config_file.read_text())
        except (OSError, json.JSONDecodeError) as e:
            fail(f"{config_file}: not readable as JSON ({e})")
        if not isinstance(config, dict):
            fail(f"{config_file}: not a JSON object")
    if path.name.endswith(".index.json"):
        return Sharded(path), config, config_file, path
    with open(path, "rb") as f:
        start = f.read(9)
    n = int.from_bytes(start[:8], "little") if len(start) == 9 else 0
    if path.suffix == ".safetensors" or (start[8:9] == b"{" and 0 < n < path.stat().st_size):
        return SafeTensors(path), config, config_file, path
    return torch_load(path, allow_pickle), config, config_file, path


# --------------------------------------------------------------------------------------------------
# --layer N: the attention module of layer N, by the families' naming

LAYER_PATHS = (r"layers\.{n}\.self_attn",        # Llama, Mistral, Qwen2, Phi-3, BART, Whisper
               r"layer\.{n}\.attention",         # BERT, RoBERTa, ELECTRA, ViT, DistilBERT
               r"h\.{n}\.attn",                  # GPT-2
               r"layers\.{n}\.attention",        # GPT-NeoX / Pythia
               r"block\.{n}\.layer\.0\.SelfAttention")  # T5 (refused)


def layer_prefix(names, n):
    pattern = re.compile(r"^((?:.*\.)?(?:" + "|".join(p.format(n=n) for p in LAYER_PATHS) + r"))\.")
    found = sorted({m.group(1) for m in map(pattern.match, names) if m})
    if len(found) == 1:
        return found[0]
    if not found:
        any_layer = re.compile(r"^((?:.*\.)?(?:" + "|".join(p.format(n=r"\d+") for p in LAYER_PATHS)
                               + r"))\.")
        layers = sorted({m.group(1) for m in map(any_layer.match, names) if m})
        shown = ", ".join(layers[:6]) + (", ..." if len(layers) > 6 else "")
        fail(f"--layer {n}: no attention module of layer {n} (as *.layers.{n}.self_attn, "
             f"*.layer.{n}.attention, *.h.{n}.attn, *.layers.{n}.attention); "
             + (f"found {shown}" if layers else "no layer of any known family"))
    fail(f"--layer {n} matches {len(found)} attention modules ({', '.join(found)}): "
         "give --prefix instead")


# --------------------------------------------------------------------------------------------------
# config.json

ROPE_MODELS = {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "phi3", "gpt_neox", "gemma",
               "olmo", "starcoder2", "stablelm", "granite", "cohere"}
QK_NORM_MODELS = {"qwen3", "qwen3_moe", "olmo2", "gemma3", "gemma3_text", "chameleon"}
T5_MODELS = {"t5", "mt5", "umt5", "longt5", "switch_transformers"}


class HfConfig:
    """What config.json says about one attention layer; `used` lists the keys taken from it."""

    def __init__(self, config, path, prefix, layer):
        self.c = config or {}
        self.present = config is not None
        self.where = "config.json" if path is None else path.name
        self.prefix, self.layer = prefix, layer
        self.model_type = self.c.get("model_type")
        self.used = []

    def get(self, *keys):
        """The first of keys present (non-null) in config.json, nested "a/b" keys included."""
        for key in keys:
            v = self.c
            for part in key.split("/"):
                v = v.get(part) if isinstance(v, dict) else None
            if v is not None:
                return key, v
        return None, None

    def take(self, *keys):
        key, v = self.get(*keys)
        if key is not None:
            self.used.append(key)
        return key, v

    def heads(self):
        keys = ("num_attention_heads", "n_head", "n_heads", "num_heads")
        if self.model_type in ("bart", "whisper", "mbart", "marian", "pegasus", "m2m_100"):
            side = "decoder" if "decoder" in self.prefix.split(".") else "encoder"
            keys = (f"{side}_attention_heads",) + keys
        return self.take(*keys)

    def refuse_unsupported(self):
        """What emha cannot express, by name (checked before any tensor is read)."""
        if not self.present:
            return
        mt = self.model_type
        if mt in T5_MODELS:
            fail(f"{self.where} model_type {mt}: T5 attention is not supported (its "
                 "relative_attention_bias, a bucketed relative position bias added to the scores, "
                 "and its unscaled scores, no 1/sqrt(d_k), have no emha Config member)")
        if mt in QK_NORM_MODELS:
            fail(f"{self.where} model_type {mt}: QK-norm (q_norm/k_norm) is not supported")
        for key in ("query_pre_attn_scalar", "attn_logit_softcapping"):
            _, v = self.get(key)
            if v is not None:
                fail(f"{self.where} {key} = {v}: not supported (emha scales scores by "
                     "1/sqrt(d_k) and has no logit soft-capping)")
        _, scaling = self.get("rope_parameters", "rope_scaling")
        if isinstance(scaling, dict):
            kind = scaling.get("rope_type", scaling.get("type"))
            if kind not in (None, "default"):
                fail(f"{self.where} rope scaling '{kind}' (rope_scaling / rope_parameters) is not "
                     "supported: emha implements plain RoPE (rope_theta) only")
        _, pe = self.get("position_embedding_type")
        if pe not in (None, "absolute"):
            fail(f"{self.where} position_embedding_type = {pe}: BERT's relative position "
                 "embeddings (distance_embedding) are not supported")
        if mt == "gpt2":
            if self.c.get("scale_attn_weights", True) is False:
                fail(f"{self.where} scale_attn_weights = false: unscaled scores are not supported")
            if self.c.get("scale_attn_by_inverse_layer_idx"):
                fail(f"{self.where} scale_attn_by_inverse_layer_idx = true: a per-layer score "
                     "scale 1/(layer + 1) is not supported")

    def check_head_dim(self, d, heads):
        key, hd = self.get("head_dim")
        if key is not None and heads and hd * heads != d:
            fail(f"head_dim {hd} with hidden_size {d} / {heads} heads: emha needs head_dim = "
                 "d_model / heads")

    def kv_heads(self):
        return self.take("num_key_value_heads", "num_kv_heads")

    def uses_rope(self, family):
        return family in ("neox", "phi3") or (family == "proj" and self.model_type in ROPE_MODELS)

    def rope_base(self):
        return self.take("rope_parameters/rope_theta", "rope_theta", "rotary_emb_base")

    def rotary_fraction(self):
        return self.take("rope_parameters/partial_rotary_factor", "partial_rotary_factor",
                         "rotary_pct")

    def sliding_window(self):
        """HF's window for this layer: layer_types[N] when given, Qwen2's use_sliding_window /
        max_window_layers, else sliding_window as it is (0: none)."""
        key, types = self.get("layer_types")
        if isinstance(types, list) and self.layer is not None and self.layer < len(types):
            self.used.append(f"{key}[{self.layer}]")
            if types[self.layer] != "sliding_attention":
                return None, 0
        elif self.get("use_sliding_window")[0] is not None:
            self.used.append("use_sliding_window")
            if not self.c["use_sliding_window"]:
                return None, 0
            _, first = self.take("max_window_layers")
            if first is not None and self.layer is not None and self.layer < first:
                return None, 0
        key, w = self.take("sliding_window")
        return key, int(w) if w is not None else 0

    def norm_eps(self):
        return self.take("layer_norm_eps", "layer_norm_epsilon", "rms_norm_eps")

    def causal(self, family):
        if family in ("gpt2", "neox", "phi3"):
            return True
        if family == "proj" and self.model_type in ROPE_MODELS:
            return True
        return bool(self.c.get("is_decoder"))

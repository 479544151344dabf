# SPDX-License-Identifier: Apache-2.0
"""Checkpoints as users have them, and Hugging Face's config.json.

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

from .errors import fail

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

LAYER_PATHS = (r"layers\.{n}\.self_attn",        # Llama, Mistral, Qwen2/3, Gemma 3, OLMo-2, Phi-3, BART
               r"layer\.{n}\.attention",         # BERT, RoBERTa, ELECTRA, ViT, DistilBERT
               r"h\.{n}\.attn",                  # GPT-2
               r"h\.{n}\.self_attention",        # BLOOM
               r"layers\.{n}\.attention",        # GPT-NeoX / Pythia
               r"block\.{n}\.layer\.0\.SelfAttention")  # T5 (encoder and decoder stacks)


def parse_layer(text):
    """--layer N or --layer STACK.N (STACK: a name part before the layer, e.g. encoder, decoder)."""
    stack, _, n = str(text).rpartition(".")
    if not n.isdigit() or (stack and not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", stack)):
        fail(f"--layer {text}: expected N or STACK.N (e.g. 3, encoder.3, decoder.3)")
    return stack, int(n)


def layer_prefix(names, layer):
    stack, n = parse_layer(layer)
    within = rf"(?:.*\.)?{re.escape(stack)}\.(?:.*\.)?" if stack else r"(?:.*\.)?"
    pattern = re.compile(r"^(" + within + r"(?:" + "|".join(p.format(n=n) for p in LAYER_PATHS)
                         + r"))\.")
    found = sorted({m.group(1) for m in map(pattern.match, names) if m})
    if len(found) == 1:
        return found[0]
    if not found:
        any_layer = re.compile(r"^((?:.*\.)?(?:" + "|".join(p.format(n=r"\d+") for p in LAYER_PATHS)
                               + r"))\.")
        layers = sorted({m.group(1) for m in map(any_layer.match, names) if m})
        shown = ", ".join(layers[:6]) + (", ..." if len(layers) > 6 else "")
        fail(f"--layer {layer}: no attention module of layer {n}"
             + (f" under '{stack}'" if stack else "")
             + f" (as *.layers.{n}.self_attn, *.layer.{n}.attention, *.h.{n}.attn, "
             f"*.layers.{n}.attention, *.block.{n}.layer.0.SelfAttention); "
             + (f"found {shown}" if layers else "no layer of any known family"))
    stacks = sorted({f.split(".")[0] for f in found})
    hint = (f"give --layer {stacks[0]}.{n} or {stacks[1]}.{n}, or --prefix" if len(stacks) == 2
            else "give --prefix instead")
    fail(f"--layer {layer} matches {len(found)} attention modules ({', '.join(found)}): {hint}")


def t5_bias_prefix(prefix):
    """T5: the relative_attention_bias table of a layer is block 0's of the same stack."""
    return re.sub(r"block\.\d+\.layer\.0\.SelfAttention$", "block.0.layer.0.SelfAttention", prefix)


# --------------------------------------------------------------------------------------------------
# config.json

ROPE_MODELS = {"gptj", "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "phi3", "phi", "gpt_neox", "gemma",
               "gemma2", "olmo", "starcoder2", "stablelm", "granite", "cohere", "qwen3", "qwen3_moe",
               "olmo2", "gemma3", "gemma3_text"}
# QK-norm: per head over head_dim (Qwen3, Gemma 3: (1 + w)) or over the whole projection (OLMo-2)
QK_NORM_MODELS = {"qwen3": "per_head", "qwen3_moe": "per_head", "gemma3": "per_head",
                  "gemma3_text": "per_head", "olmo2": "whole"}
GEMMA_MODELS = {"gemma", "gemma2", "gemma3", "gemma3_text"}  # RMSNorm x_hat * (1 + w)
T5_MODELS = {"t5", "mt5", "umt5", "switch_transformers"}
# Sandwich norms around the attention (emha has one placement: none, pre, post or sub), and the
# norm of a parallel block, which feeds the attention and the MLP alike
OUTSIDE_NORMS = {"gptj": "ln_1 (shared with the MLP: attention and MLP in parallel)",
                 "phi": "input_layernorm (shared with the MLP: attention and MLP in parallel)",
                 "cohere": "input_layernorm (shared with the MLP: attention and MLP in parallel)",
                 "granite": "residual_multiplier (x + attention * residual_multiplier)",
                 "falcon": "input_layernorm or ln_attn (parallel_attn: attention and MLP in "
                           "parallel)",
                 "dinov2": "layer_scale1 (x + attention * lambda1)",
                 "gemma2": "input_layernorm and post_attention_layernorm (sandwich)",
                 "gemma3": "input_layernorm and post_attention_layernorm (sandwich)",
                 "gemma3_text": "input_layernorm and post_attention_layernorm (sandwich)",
                 "olmo2": "post_attention_layernorm (on the attention output, before the residual)"}


# The model_types whose attention the exporter reproduces from config.json and the tensors alone,
# each checked against its transformers module. Any other is refused by name unless --family
# names the layout: an attention the exporter does not know (MiniCPM's scales, Falcon's fused
# multi-query ...) would otherwise be exported as a family it only resembles, and be wrong without
# a word.
KNOWN_MODEL_TYPES = {"bart", "bert", "bloom", "clip", "clip_text_model", "clip_vision_model",
                     "cohere", "deit", "dinov2", "distilbert", "falcon", "gemma", "gemma2", "gemma3",
                     "gemma3_text", "gpt2", "gpt_bigcode", "gpt_neox", "gptj", "granite", "hubert", "llama",
                     "mistral", "olmo", "olmo2", "opt", "phi", "phi3", "qwen2", "qwen3", "roberta",
                     "siglip", "siglip_text_model", "siglip_vision_model", "stablelm", "starcoder2",
                     "t5", "vit", "wav2vec2", "whisper"}
# Attention logit soft-capping (attn_logit_softcapping): Gemma 2's and Gemma 3's attention
SOFTCAP_MODELS = {"gemma2", "gemma3", "gemma3_text"}
# ALiBi inside the attention (BLOOM's build_alibi_tensor: the paper's slopes times the key's
# position, which softmax sees as emha's -slope * (query - key) under the causal mask)
ALIBI_MODELS = {"bloom"}
# CLIP's text tower: a causal mask over its tokens (CLIPTextTransformer's causal_attention_mask)
CAUSAL_TEXT_MODELS = {"clip", "clip_text_model"}
# Attentions emha cannot express, refused with what they do (before the unknown-model_type rule).
REFUSED_MODEL_TYPES = {
    "deberta": "DeBERTa's disentangled attention (content-to-position and position-to-content "
               "scores over relative embeddings)",
    "deberta-v2": "DeBERTa's disentangled attention (content-to-position and position-to-content "
                  "scores over relative embeddings)",
    "deepseek_v2": "DeepSeek's multi-head latent attention (K and V from a low-rank compressed "
                   "latent, a decoupled RoPE key)",
    "deepseek_v3": "DeepSeek's multi-head latent attention (K and V from a low-rank compressed "
                   "latent, a decoupled RoPE key)",
    "longformer": "Longformer's attention (sliding chunks with global tokens of their own "
                  "projections)",
    "led": "Longformer's attention (sliding chunks with global tokens of their own projections)",
    "bigbird_pegasus": "BigBird's block-sparse attention with random and global blocks",
    "big_bird": "BigBird's block-sparse attention with random and global blocks",
    "mpnet": "MPNet's relative position bias (its own bucketing, shared across layers)",
    "persimmon": "Persimmon's QK LayerNorm with bias, shared across heads",
}
# A key whose non-default value (below) the module acts on in a way emha does not express.
UNSUPPORTED_KEYS = {
    "olmo": ("clip_qkv", lambda v: v is not None,
             "OLMo's clamp of q, k and v to +-clip_qkv"),
    "stablelm": ("qk_layernorm", bool, "StableLM's QK LayerNorm, with its own weights per head"),
    "phi": ("qk_layernorm", bool, "Phi's QK LayerNorm (with bias)"),
    "cohere": ("use_qk_norm", bool, "Cohere's QK LayerNorm, with its own weights per head"),
    "falcon": ("alibi", bool, "Falcon's ALiBi (added before the 1 / sqrt(head_dim) scale)"),
    "bloom": ("apply_residual_connection_post_layernorm", bool,
              "BLOOM's residual from the input_layernorm's output (not the block's input)"),
}


class HfConfig:
    """What config.json says about one attention layer; `used` lists the keys taken from it."""

    def __init__(self, config, path, prefix, layer):
        self.c = config or {}
        # A multimodal config's tower: CLIP's and SigLIP's vision_model layers read vision_config,
        # every other (Gemma 3, CLIP's and SigLIP's text_model) text_config.
        tower = "vision_config" if "vision_model" in prefix.split(".") else "text_config"
        if isinstance(self.c.get(tower), dict):
            self.c = dict(self.c[tower], model_type=self.c[tower].get(
                "model_type", self.c.get("model_type")))
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

    def refuse_unsupported(self, family):
        """What emha cannot express, by name (checked before any tensor is read); family: --family."""
        if not self.present:
            return
        mt = self.model_type
        if mt in REFUSED_MODEL_TYPES:
            fail(f"{self.where} model_type {mt}: {REFUSED_MODEL_TYPES[mt]} is not supported")
        if mt == "longt5":
            fail(f"{self.where} model_type longt5: LongT5's local / transient-global attention is "
                 "not supported (T5's full attention with relative_attention_bias is)")
        _, v = self.get("attn_logit_softcapping")
        if v is not None and mt not in SOFTCAP_MODELS:
            fail(f"{self.where} attn_logit_softcapping = {v} with model_type {mt}: only Gemma 2's "
                 "and Gemma 3's attention read it (cap * tanh(s / cap) on the scores)")
        if self.get("query_pre_attn_scalar")[0] is not None and mt not in GEMMA_MODELS:
            fail(f"{self.where} query_pre_attn_scalar with model_type {mt}: only Gemma's "
                 "scaling = query_pre_attn_scalar ** -0.5 is known to the exporter")
        if self.get("use_bidirectional_attention")[1]:
            fail(f"{self.where} use_bidirectional_attention = true: Gemma 3's bidirectional "
                 "variant (no causal mask, sliding window both ways) is not supported")
        rule = UNSUPPORTED_KEYS.get(mt)
        if rule is not None:
            key, applies, what = rule
            _, v = self.take(key)
            if applies(v):
                fail(f"{self.where} {key} = {v} (model_type {mt}): {what} is not supported")
        _, pe = self.get("position_embedding_type")
        if pe not in (None, "absolute"):
            fail(f"{self.where} position_embedding_type = {pe}: BERT's relative position "
                 "embeddings (distance_embedding) are not supported")
        if mt == "gpt2" and self.c.get("scale_attn_by_inverse_layer_idx") and self.layer is None:
            fail(f"{self.where} scale_attn_by_inverse_layer_idx = true: the score scale divides by "
                 "the layer index + 1: give --layer N instead of --prefix")
        # Last: the refusals above name what exactly is not supported.
        if mt is not None and mt not in KNOWN_MODEL_TYPES and family == "auto":
            fail(f"{self.where} model_type {mt}: not a model the exporter knows (known: "
                 f"{', '.join(sorted(KNOWN_MODEL_TYPES))}); its attention may differ from every "
                 "known one. Give --family with the layout of its tensors to export it as that "
                 "family, checking its output against the module's")

    def head_dim(self):
        return self.take("head_dim", "d_kv") if self.model_type in T5_MODELS or \
            self.get("head_dim")[0] else (None, None)

    def qk_norm(self):
        """(kind, unit_offset, eps key, eps) for a QK-norm model_type, else (None, ...)."""
        kind = QK_NORM_MODELS.get(self.model_type)
        if kind is None:
            return None, False, None, None
        key, eps = self.take("rms_norm_eps")
        return kind, self.model_type in GEMMA_MODELS, key, eps

    def scale(self, d_k):
        """(key, score scale) when config.json sets one: Gemma's query_pre_attn_scalar ** -0.5,
        T5's 1 (no scaling), GPT-2's scale_attn_weights = false (1) and
        scale_attn_by_inverse_layer_idx (divided by layer + 1)."""
        if self.model_type in ("gpt2", "gpt_bigcode"):
            unscaled = self.c.get("scale_attn_weights", True) is False
            by_layer = bool(self.c.get("scale_attn_by_inverse_layer_idx"))
            if not unscaled and not by_layer:
                return None, None
            keys = [k for k, on in (("scale_attn_weights = false", unscaled),
                                     (f"scale_attn_by_inverse_layer_idx (layer {self.layer})",
                                      by_layer)) if on]
            self.used += [k.split(" ")[0] for k in keys]
            return " and ".join(keys), (1.0 if unscaled else d_k ** -0.5) / \
                (self.layer + 1 if by_layer else 1)
        if self.model_type in T5_MODELS:
            return f"model_type {self.model_type}: unscaled scores", 1.0
        if self.model_type == "granite":  # scores * attention_multiplier
            key, v = self.take("attention_multiplier")
            return (key, float(v)) if key else ("attention_multiplier (default)", 1.0)
        key, v = self.take("query_pre_attn_scalar")
        return (key, float(v) ** -0.5) if key else (None, None)

    def softcap(self):
        """(key, cap) of attn_logit_softcapping where the model_type reads it, else (None, 0)."""
        if self.model_type not in SOFTCAP_MODELS:
            return None, 0.0
        key, v = self.take("attn_logit_softcapping")
        return (key, float(v)) if v is not None else (None, 0.0)

    def relative_bias(self):
        """T5: (num_buckets, max_distance, bidirectional = encoder)."""
        _, buckets = self.take("relative_attention_num_buckets")
        _, distance = self.take("relative_attention_max_distance")
        return int(buckets if buckets is not None else 32), \
            int(distance if distance is not None else 128), \
            "decoder" not in self.prefix.split(".")

    def outside_norms(self):
        return OUTSIDE_NORMS.get(self.model_type)

    def fused_layout(self, heads):
        """(family, layout, kv_heads, the keys that say so) of a fused projection config.json lays
        out, else None. Falcon's query_key_value (FalconAttention._split_heads): grouped by
        num_kv_heads under new_decoder_architecture, else one key and value (multi_query), else
        per head. GPT-BigCode's c_attn: one key and value (multi_query), else per head."""
        if self.model_type == "falcon" and self.take("new_decoder_architecture")[1]:
            key, kv = self.get("num_kv_heads")  # read_heads has taken it
            return "falcon", "grouped", int(kv if kv is not None else heads), \
                f"new_decoder_architecture and {key or 'num_kv_heads (default: heads)'}"
        if self.model_type not in ("falcon", "gpt_bigcode"):
            return None
        family = "falcon" if self.model_type == "falcon" else "bigcode"
        if self.take("multi_query")[1] is not False:  # both configs' default: true
            return family, "multi_query", 1, "multi_query"
        return family, "per_head", heads, "multi_query = false"

    def kv_heads(self):
        return self.take("num_key_value_heads", "num_kv_heads")

    def uses_rope(self, family):
        if self.model_type in ALIBI_MODELS:
            return False
        if family == "falcon":
            return True  # its alibi variant is refused
        return family in ("neox", "phi3") or (family == "proj" and self.model_type in ROPE_MODELS)

    def position(self, family):
        """The position the model_type implies: rope, alibi (BLOOM) or none."""
        return "alibi" if self.model_type in ALIBI_MODELS else \
            "rope" if self.uses_rope(family) else "none"

    def rope_pairing(self):
        """(pairing, how the module rotates): GPT-J's rotate_every_two pairs (2i, 2i + 1), every
        other RoPE model's rotate_half pairs (i, i + rotated / 2)."""
        if self.model_type == "gptj":
            return "interleaved", "rotate_every_two"
        if self.model_type == "cohere":  # its rotate_half: stack(-x[1::2], x[::2])
            return "interleaved", "Cohere's rotate_half on (2i, 2i + 1) pairs"
        return "half", "rotate_half"

    def rotary_dims(self, d_k):
        """(key, rotated dims) when config.json sets them absolutely (GPT-J's rotary_dim), else
        (None, None)."""
        if self.model_type != "gptj":
            return None, None
        key, dims = self.take("rotary_dim")
        if not isinstance(dims, int) or dims <= 0 or dims % 2 or dims > d_k:
            fail(f"{self.where} rotary_dim = {dims}: GPT-J's rotary needs an even number of "
                 f"dims, at most head_dim {d_k} (without it, the module rotates d_model-wide "
                 "tables over each head, which is not supported)")
        return key, dims

    def rope_base(self):
        if self.model_type == "gptj":  # create_sinusoidal_positions: 10000, no config key
            return "model_type gptj (modeling_gptj's fixed base)", 10000.0
        if self.model_type in ("gemma3", "gemma3_text") and self.is_sliding():
            key, v = self.take("rope_local_base_freq")  # Gemma 3's local RoPE on sliding layers
            return (key, v) if key else ("rope_local_base_freq (default)", 10000.0)
        return self.take("rope_parameters/rope_theta", "rope_theta", "rotary_emb_base")

    def rope_scaling(self):
        """(key, rope_scaling dict) of this layer, or (None, None): Gemma 3's sliding layers use
        their local RoPE, never scaled; a per-layer-type rope_parameters gives this layer's."""
        if self.model_type in ("gemma3", "gemma3_text") and self.is_sliding():
            return None, None
        key, scaling = self.get("rope_parameters", "rope_scaling")
        if isinstance(scaling, dict) and "rope_type" not in scaling and "type" not in scaling:
            _, types = self.get("layer_types")  # {layer_type: {...}}
            if isinstance(types, list) and self.layer is not None and self.layer < len(types):
                key = f"{key}/{types[self.layer]}"
                scaling = scaling.get(types[self.layer])
        if not isinstance(scaling, dict):
            return None, None
        self.used.append(key)
        return key, scaling

    def is_sliding(self):
        """Whether layer N is a sliding-window layer by layer_types or Gemma 3's older
        sliding_window_pattern (every pattern-th layer full); None when neither says."""
        _, types = self.get("layer_types")
        if isinstance(types, list) and self.layer is not None and self.layer < len(types):
            return types[self.layer] == "sliding_attention"
        _, pattern = self.get("sliding_window_pattern")
        if isinstance(pattern, int) and pattern > 0 and self.layer is not None:
            return (self.layer + 1) % pattern != 0
        if self.model_type == "gemma2" and self.layer is not None:  # even layers slide
            return self.layer % 2 == 0
        return None

    def rotary_fraction(self):
        return self.take("rope_parameters/partial_rotary_factor", "partial_rotary_factor",
                         "rotary_pct")

    def sliding_window(self):
        """HF's window for this layer: layer_types[N] when given, Qwen2's use_sliding_window /
        max_window_layers, else sliding_window as it is (0: none)."""
        key, types = self.get("layer_types")
        sliding = self.is_sliding()
        if sliding is not None:
            self.used.append(f"{key}[{self.layer}]" if isinstance(types, list)
                             else "sliding_window_pattern" if self.get("sliding_window_pattern")[0]
                             else f"model_type gemma2 (layer {self.layer}: even layers slide)")
            if not sliding:
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
        if family in ("gpt2", "neox", "phi3", "falcon", "bigcode"):
            return True
        if family == "proj" and self.model_type in ROPE_MODELS:
            return True
        if family == "t5":
            return "decoder" in self.prefix.split(".")
        if self.model_type in CAUSAL_TEXT_MODELS:
            return "vision_model" not in self.prefix.split(".")
        return bool(self.c.get("is_decoder"))

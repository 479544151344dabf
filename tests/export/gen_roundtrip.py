# SPDX-License-Identifier: Apache-2.0
"""Round-trip fixtures of the weight exporter: for each naming family, a randomly
initialized PyTorch module is saved with torch.save and exported by lib/export/emha_export.py run
as a user runs it (a subprocess), and the module's own outputs are recorded for the C++ test.

Writes, per case, into tests/export/fixtures/:
  <case>.hpp           the exporter's header: namespace export_fixtures::<case> { Config,
                       the weight arrays, weights(), the exporter's reference ref_input/ref_output }
  <case>.bin           the exporter's blob (the same weights and reference)
  <case>_expected.hpp  export_fixtures::<case>::expected: a test input (batch-first [B, S, dim]),
                       the real module's float32 output `out` and its float64 copy's `out_f64` (the
                       truth), and what the test passes to forward(): batch, seq_q, seq_kv, causal,
                       scale (0: emha's 1/sqrt(d_k); the blog quirk's otherwise)
It also checks that each blob's reference output (the exporter's own float64 implementation of
emha's forward) equals the real module's float64 output on the reference input within 1e-5.

Run from tests/export/ with /usr/bin/python3 (deterministic: rerunning writes identical files):

    cd tests/export && /usr/bin/python3 gen_roundtrip.py

Cases: nn_mha (in_proj_weight, causal), nn_mha_int8 (nn_mha's case, its own seed, exported with
--weights int8: its expected outputs, out_f64 and torch float32's out, are the DEQUANTIZED
module's, whose projection weights are q * scale; the blob's int8 values and scales are checked
bit for bit against this file's own quantization; listed in all_int8.hpp, not in all.hpp),
nn_mha_kvdim (kdim 12, vdim 20: q/k/v_proj_weight, cross-attention, no reference), encoder_layer (nn.TransformerEncoder saved whole: self_attn + norm1
post-LN, heads and norm from the module's attributes), torchscale (xPos, sub-LN), hf_gqa (q/k/v/
o_proj, 4 query heads on 2 K/V heads, RoPE, sliding window, pre-LN RMSNorm, causal, no biases),
labml (bias=False: V and output biases only, causal), blog (the blog block as its code is written,
tests/attention's BlogEncoderAttention: .view(batch * heads, -1, d_k) with no transpose, the
(d_k // heads) ** -0.5 scale, post-LN; exported with the linear family's defaults, head_split
flat_view), blog_columns (BlogColumnsAttention, the conventional per-head split, --head-split
columns), per_head
(q_heads.i lists); Hugging Face folders (config.json +
model.safetensors written by hf_checkpoint.py, or pytorch_model.bin), exported with --layer 1 and
the maxima only, the modules re-implemented in hf_modules.py from transformers' files: hf_bert
(post-LN inside BertAttention), hf_vit, hf_distilbert (pytorch_model.bin), hf_gpt2 (Conv1D,
causal), hf_neox (interleaved query_key_value, partial rotary), hf_gptj (interleaved rotary
pairs on rotary_dim, no biases), hf_phi3 (fused qkv_proj, GQA,
partial rotary, sliding window), hf_mistral (q/k/v/o_proj, GQA, rope_theta, sliding window),
hf_qwen3 (head_dim 8 x 4 heads over 24, per-head QK-norm), hf_gemma3 (layer 1 sliding: window 4,
rope_local_base_freq; query_pre_attn_scalar; (1 + w) QK-norm; its sandwich norms outside),
hf_olmo2 (QK-norm over the whole projection), hf_t5_encoder / hf_t5_decoder (--layer
encoder.1 / decoder.1: d_kv 8 x 4 heads over 16, block 0's relative bias table, pre-RMSNorm; the
_expected header also holds the bucket of every relative position), hf_llama31 (Llama 3.1's
llama3 rope_scaling over every band, GQA), hf_qwen2_yarn (yarn with
original_max_position_embeddings, q/k/v biases), hf_longrope (a Phi-3-style longrope on a Llama:
short factors, top-level original_max_position_embeddings); each also exported with
--reference-rows into a temporary folder, whose reference is checked here.

hf_folders/<case>/ keeps the checkpoint folders of hf_qwen3, hf_gemma3, hf_olmo2, hf_mistral,
hf_phi3, the three RoPE scaling cases and the T5 cases with expected.json (the input and the re-implementation's float64 output) for
hf_crosscheck.py, which compares them with transformers' own classes.
"""
import copy
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile
import zlib

import numpy as np
import torch
from torch import nn

sys.dont_write_bytecode = True
HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "attention"))
sys.path.insert(0, str(HERE.parent.parent / "lib" / "export"))
from gen_fixtures import array_member  # noqa: E402
from gen_seed_fixtures import (BlogColumnsAttention, BlogEncoderAttention, FeatureMHA,  # noqa: E402
                               LabmlMHA, PerHeadMHA, TorchscaleMHA, default_dtype, float64_copy,
                               randomize)
from hf_checkpoint import write_folder  # noqa: E402
import hf_modules as hf  # noqa: E402
from read_blob import read_blob  # noqa: E402
from emha_export.reference import relative_bucket  # noqa: E402

OUT_DIR = HERE / "fixtures"
CROSSCHECK_DIR = HERE / "hf_folders"  # the checkpoints hf_crosscheck.py runs real transformers on
REF_TOLERANCE = 1e-5  # blob reference vs the real module's float64 output, max |difference|
BATCH = 2


def causal_mask(n):
    return torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)  # True = hidden


class Case:
    """One family: `module` (randomly initialized, float32), what torch.save stores (`saved`),
    the exporter's flags, and run(m, q, k, v) -> out on batch-first inputs, for the float32 module
    and its float64 copy alike (batch 1 for the reference check)."""
    kdim = vdim = None
    causal = False
    scale = 0.0
    seq_kv = None
    whole_module = False

    def __init__(self, name):
        self.name = name
        torch.manual_seed(zlib.crc32(name.encode()))
        self.module = randomize(self.build())

    def saved(self):
        holder = self.holder()
        return holder if self.whole_module else holder.state_dict()

    def holder(self):
        """The module at the case's --prefix in a parent (a realistic state_dict name)."""
        root = nn.Module()
        parent = root
        parts = self.prefix.split(".")
        for part in parts[:-1]:  # e.g. encoder / layers / 0
            child = nn.Module()
            parent.add_module(part, child)
            parent = child
        parent.add_module(parts[-1], self.module)
        return root

    def ref_run(self, m, x):
        """The module on the reference input x [1, N, D] as emha's reference runs it."""
        return self.run(m, x, x, x)


class NnMha(Case):
    prefix, flags, causal = "attn", ["--heads", "2", "--reference-rows", "7",
                                     "--reference-causal"], True
    d_model, seq = 16, 7

    def build(self):
        return nn.MultiheadAttention(16, 2, batch_first=True)

    def run(self, m, q, k, v):
        return m(q, k, v, attn_mask=causal_mask(q.shape[1]), need_weights=False)[0]


def quantize_rows(w):
    """(q, scale) of PRIOR-ART's W8A32 scheme, written here apart from the exporter: per row,
    scale = amax / 127 (1 for a zero row), q = round half to even (w / scale) in [-127, 127]."""
    amax = w.abs().amax(dim=1)
    scale = torch.where(amax == 0, torch.ones_like(amax), amax / 127)
    return torch.round(w / scale[:, None]).clamp(-127, 127).to(torch.int8), scale


class NnMhaInt8(NnMha):
    """NnMha's module exported with --weights int8. self.module is its dequantized copy (in_proj
    and out_proj weights q * scale in float32, what the layer computes with): the expected
    outputs and the reference check are that module's; the float module is what is saved."""
    flags = NnMha.flags + ["--weights", "int8"]
    int8 = True

    def __init__(self, name):
        super().__init__(name)
        self.float_module = self.module
        self.module = copy.deepcopy(self.module)
        self.quantized = {}
        with torch.no_grad():
            for name_, w in (("in_proj_weight", self.module.in_proj_weight),
                             ("out_proj_weight", self.module.out_proj.weight)):
                q, scale = quantize_rows(w.detach())
                self.quantized[name_] = (q, scale)
                w.copy_(q.float() * scale[:, None])

    def saved(self):
        dequantized, self.module = self.module, self.float_module
        try:
            return super().saved()
        finally:
            self.module = dequantized

    def check_blob(self, blob):
        """The blob's int8 weights and scales: quantize_rows' of the float module, bit for bit."""
        _, tensors = read_blob(blob.read_bytes())
        for name_, (q_id, s_id) in (("in_proj_weight", (18, 24)), ("out_proj_weight", (22, 28))):
            q, scale = self.quantized[name_]
            if not (np.array_equal(tensors[q_id], q.numpy()) and
                    np.array_equal(tensors[s_id][:, 0].view(np.uint32),
                                   scale.numpy().astype(np.float32).view(np.uint32))):
                sys.exit(f"{self.name}: the blob's {name_} int8 or scale differs from "
                         "quantize_rows'")


class NnMhaKvdim(Case):
    prefix, flags = "decoder.cross_attn", ["--heads", "4", "--max-seq-kv", "8"]
    d_model, seq, seq_kv, kdim, vdim = 16, 6, 7, 12, 20

    def build(self):
        return nn.MultiheadAttention(16, 4, kdim=12, vdim=20, batch_first=True)

    def run(self, m, q, k, v):
        return m(q, k, v, need_weights=False)[0]


class EncoderLayer(Case):
    # heads and the norm's eps come from the saved module's attributes (no --heads)
    prefix, whole_module = "layers.0.self_attn", True
    flags = ["--norm", "post", "--norm-prefix", "layers.0.norm1", "--reference-rows", "6",
             "--allow-pickle"]
    d_model, seq = 16, 6

    def build(self):
        layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True)
        return nn.TransformerEncoder(layer, num_layers=1, enable_nested_tensor=False)

    def holder(self):
        return self.module

    def run(self, m, q, k, v):  # the layer's self-attention block: norm1(x + self_attn(x))
        layer = m.layers[0]
        return layer.norm1(q + layer.self_attn(q, k, v, need_weights=False)[0])


class Torchscale(Case):
    prefix = "encoder.layers.0.self_attn"
    flags = ["--heads", "2", "--position", "xpos", "--norm", "sub", "--reference-rows", "6"]
    d_model, seq = 16, 6

    def build(self):
        return TorchscaleMHA(16, 2, xpos=True, subln=True)

    def run(self, m, q, k, v):
        with default_dtype(q.dtype):  # xPos's tensors in the module's dtype (float64 truth)
            return m(q, k, v)[0]


class HfGqa(Case):
    prefix = "model.layers.0.self_attn"
    flags = ["--heads", "4", "--kv-heads", "2", "--position", "rope", "--sliding-window", "5",
             "--norm", "pre", "--norm-kind", "rms_norm", "--norm-prefix",
             "model.layers.0.self_attn.norm", "--norm-eps", "1e-6", "--reference-rows", "8",
             "--reference-causal"]
    d_model, seq, causal = 24, 8, True

    def build(self):
        return FeatureMHA(24, 4, bias=False, kv_heads=2, position="rope", sliding_window=5,
                          norm="pre", norm_kind="rms_norm", norm_eps=1e-6)

    def run(self, m, q, k, v):
        return m(q)


class Labml(Case):
    prefix, flags, causal = "mha", ["--heads", "4", "--reference-rows", "6",
                                    "--reference-causal"], True
    d_model, seq = 16, 6

    def build(self):
        return LabmlMHA(4, 16, bias=False)

    def run(self, m, q, k, v):  # labml is sequence-first; its mask [S_q, S_kv, 1], 1 = attend
        mask = ~causal_mask(q.shape[1])[:, :, None]
        t = lambda x: x.transpose(0, 1)  # noqa: E731
        return t(m(query=t(q), key=t(k), value=t(v), mask=mask))


class Blog(Case):
    """The blog block as its code is written (tests/attention's BlogEncoderAttention, the seed's
    code: `.view(batch * heads, -1, d_k)` with no transpose, the (d_k // heads) ** -0.5 scale),
    exported with the linear family's defaults (flat_view, its scale)."""
    prefix, flags = "encoder.layers.0.attention", ["--heads", "2", "--reference-rows", "6"]
    d_model, seq = 16, 6

    def build(self):
        return BlogEncoderAttention(16, 2)

    def run(self, m, q, k, v):
        return m(q, k, v)


class BlogColumns(Blog):  # the conventional per-head column split: --head-split columns
    flags = ["--heads", "2", "--head-split", "columns", "--reference-rows", "6"]

    def build(self):
        return BlogColumnsAttention(16, 2)


class PerHead(Case):
    prefix, flags = "attn", ["--heads", "4", "--reference-rows", "6"]
    d_model, seq = 16, 6

    def build(self):
        return PerHeadMHA(16, 4)

    def run(self, m, q, k, v):
        return m(q)


class HfCase(Case):
    """A Hugging Face family: layers 0 and 1 of the family's attention (re-implemented from the
    transformers file named in hf_modules.py) under its real names, with config.json, as the Hub
    ships them (model.safetensors unless fmt says pytorch_model.bin); exported with --layer 1 and
    the maxima only. `extra` adds tensors outside the attention (norms of the block)."""
    layer, fmt, seq, flags = 1, "safetensors", 6, []

    crosscheck = False  # also written to hf_folders/ for hf_crosscheck.py

    def build(self):
        self.other = randomize_norms(randomize(self.make_layer(0)))  # only in the checkpoint
        return randomize_norms(self.make_layer(self.layer))

    def make_layer(self, i):
        return self.make()

    def run(self, m, q, k, v):
        return m(q)

    def checkpoint(self, tmp):
        state = {}
        n = int(str(self.layer).rpartition(".")[2])  # --layer N or STACK.N
        for i, m in ((0, self.other), (n, self.module)):
            state.update({f"{self.path.format(i)}.{k}": t for k, t in m.state_dict().items()})
        state.update(self.extra())
        return write_folder(tmp / self.name, self.config, state, self.fmt)

    def extra(self):
        return {}


class HfBert(HfCase):  # BertAttention: post-LN with the residual (BertSelfOutput)
    path, d_model = "bert.encoder.layer.{}.attention", 32
    config = dict(model_type="bert", hidden_size=32, num_attention_heads=4, layer_norm_eps=1e-12,
                  position_embedding_type="absolute", num_hidden_layers=2)

    def make(self):
        return hf.BertAttention(32, 4, 1e-12)


class HfVit(HfCase):  # the norms are outside the attention (layernorm_before in the layer)
    path, d_model = "vit.encoder.layer.{}.attention", 32
    config = dict(model_type="vit", hidden_size=32, num_attention_heads=2, layer_norm_eps=1e-12,
                  qkv_bias=True)

    def make(self):
        return hf.ViTAttention(32, 2)

    def extra(self):
        return {f"vit.encoder.layer.1.layernorm_before.{k}": torch.rand(32) for k in ("weight", "bias")}


class HfDistilbert(HfCase):  # pytorch_model.bin
    path, d_model, fmt = "distilbert.transformer.layer.{}.attention", 16, "bin"
    config = dict(model_type="distilbert", dim=16, n_heads=2, n_layers=2, hidden_dim=32)

    def make(self):
        return hf.DistilBertAttention(16, 2)


class HfGpt2(HfCase):  # Conv1D [in, out], c_attn columns q | k | v; the Hub's names have no prefix
    path, d_model, causal = "h.{}.attn", 32, True
    config = dict(model_type="gpt2", n_embd=32, n_head=4, n_layer=2, n_positions=16,
                  layer_norm_epsilon=1e-5, scale_attn_weights=True)

    def make(self):
        return hf.GPT2Attention(32, 4, 16)


class HfNeox(HfCase):  # query_key_value rows [H, 3, d_k]; rotary on the first rotary_pct of d_k
    path, d_model, causal = "gpt_neox.layers.{}.attention", 32, True
    config = dict(model_type="gpt_neox", hidden_size=32, num_attention_heads=4, rotary_pct=0.5,
                  rotary_emb_base=10000, max_position_embeddings=16, use_parallel_residual=True,
                  layer_norm_eps=1e-5)

    def make(self):
        return hf.GPTNeoXAttention(32, 4, 0.5, 10000, 16)


class HfGptj(HfCase):  # q/k/v/out_proj, no bias; interleaved rotary on rotary_dim 4 of head_dim 8
    path, d_model, causal = "transformer.h.{}.attn", 32, True
    config = dict(model_type="gptj", n_embd=32, n_head=4, n_layer=2, rotary_dim=4, n_positions=16,
                  layer_norm_epsilon=1e-5)

    def make(self):
        return hf.GPTJAttention(32, 4, 4, 16)


class HfPhi3(HfCase):  # qkv_proj rows q | k | v, GQA, partial rotary, sliding window
    path, d_model, causal, seq, crosscheck = "model.layers.{}.self_attn", 32, True, 7, True
    config = dict(model_type="phi3", hidden_size=32, num_attention_heads=4, num_key_value_heads=2,
                  rope_theta=10000.0, partial_rotary_factor=0.5, sliding_window=4,
                  rope_scaling=None, rms_norm_eps=1e-5, max_position_embeddings=64)

    def make(self):
        return hf.Phi3Attention(32, 4, 2, 0.5, 10000.0, 4)


class HfMistral(HfCase):  # q/k/v/o_proj, GQA, rope_theta and sliding_window from config.json
    path, d_model, causal, seq, crosscheck = "model.layers.{}.self_attn", 24, True, 8, True
    config = dict(model_type="mistral", hidden_size=24, num_attention_heads=4,
                  num_key_value_heads=2, rope_theta=1000000.0, sliding_window=5, rms_norm_eps=1e-5)

    def make(self):
        return hf.LlamaAttention(24, 4, 2, 1000000.0, 5)


class HfLlama31(HfCase):  # Llama 3.1/3.2's rope_scaling (llama3): each band of the 8 pairs
    path, d_model, causal, seq, crosscheck = "model.layers.{}.self_attn", 64, True, 7, True
    scaling = dict(rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                                     high_freq_factor=4.0, original_max_position_embeddings=64),
                   max_position_embeddings=512)
    config = dict(model_type="llama", hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                  rope_theta=10000.0, rms_norm_eps=1e-5, attention_bias=False,
                  num_hidden_layers=2, **scaling)

    def make(self):
        return hf.LlamaAttention(64, 4, 2, 10000.0, 0, scaling=self.scaling)


class HfQwen2Yarn(HfCase):  # yarn with original_max_position_embeddings: factor 1024 / 256
    path, d_model, causal, seq, crosscheck = "model.layers.{}.self_attn", 32, True, 6, True
    scaling = dict(rope_scaling=dict(rope_type="yarn", factor=4.0,
                                     original_max_position_embeddings=256),
                   max_position_embeddings=1024)
    config = dict(model_type="qwen2", hidden_size=32, num_attention_heads=2, num_key_value_heads=1,
                  rope_theta=10000.0, rms_norm_eps=1e-6, use_sliding_window=False,
                  num_hidden_layers=2, **scaling)

    def make(self):
        return hf.LlamaAttention(32, 2, 1, 10000.0, 0, bias=True, scaling=self.scaling)


class HfLongrope(HfCase):  # Phi-3-style longrope on a Llama: short factors up to the original 64
    path, d_model, causal, seq, crosscheck = "model.layers.{}.self_attn", 32, True, 6, True
    short = [1.0, 1.05, 1.3, 1.9]
    scaling = dict(rope_scaling=dict(rope_type="longrope", short_factor=short,
                                     long_factor=[2.0, 4.0, 8.0, 16.0]),
                   max_position_embeddings=1024, original_max_position_embeddings=64)
    config = dict(model_type="llama", hidden_size=32, num_attention_heads=4, num_key_value_heads=4,
                  rope_theta=10000.0, rms_norm_eps=1e-5, num_hidden_layers=2, **scaling)

    def make(self):
        return hf.LlamaAttention(32, 4, 4, 10000.0, 0, scaling=self.scaling)


class HfDecoder(HfCase):
    """A Llama-lineage family from its folder (hf_modules.DecoderAttention): model.layers.N.
    self_attn, causal."""
    path, causal, seq = "model.layers.{}.self_attn", True, 6


class HfGranite(HfDecoder):  # scores * attention_multiplier; residual_multiplier outside
    d_model = 32
    config = dict(model_type="granite", hidden_size=32, num_attention_heads=4,
                  num_key_value_heads=2, rope_theta=10000.0, attention_multiplier=0.0625,
                  residual_multiplier=0.22, embedding_multiplier=12.0, logits_scaling=8.0,
                  attention_bias=False, rms_norm_eps=1e-6, num_hidden_layers=2)

    def make(self):
        return hf.DecoderAttention(32, 4, 2, 10000.0, scale=0.0625)


class HfStarcoder2(HfDecoder):  # q/k/v/o with bias, GQA, sliding window
    d_model, seq = 32, 8
    config = dict(model_type="starcoder2", hidden_size=32, num_attention_heads=4,
                  num_key_value_heads=2, rope_theta=100000.0, use_bias=True, sliding_window=5,
                  norm_epsilon=1e-5, num_hidden_layers=2)

    def make(self):
        return hf.DecoderAttention(32, 4, 2, 100000.0, qkv_bias=True, o_bias=True, window=5)


class HfOlmo(HfDecoder):  # OLMo (1): Llama's attention, no bias, clip_qkv null
    d_model = 32
    config = dict(model_type="olmo", hidden_size=32, num_attention_heads=4,
                  num_key_value_heads=4, rope_theta=10000.0, clip_qkv=None,
                  attention_bias=False, num_hidden_layers=2)

    def make(self):
        return hf.DecoderAttention(32, 4, 4, 10000.0)


class HfStablelm(HfDecoder):  # q/k/v bias, o none, a quarter of each head rotates
    d_model = 32
    config = dict(model_type="stablelm", hidden_size=32, num_attention_heads=2,
                  num_key_value_heads=2, rope_theta=10000.0, partial_rotary_factor=0.25,
                  use_qkv_bias=True, qk_layernorm=False, use_parallel_residual=False,
                  layer_norm_eps=1e-5, num_hidden_layers=2)

    def make(self):
        return hf.DecoderAttention(32, 2, 2, 10000.0, rotary=4, qkv_bias=True, divide=True)


class HfPhi(HfDecoder):  # Phi-1/1.5/2: `dense` out, every bias, partial rotary, parallel block
    d_model = 32
    config = dict(model_type="phi", hidden_size=32, num_attention_heads=4, num_key_value_heads=4,
                  rope_theta=10000.0, partial_rotary_factor=0.5, qk_layernorm=False,
                  layer_norm_eps=1e-5, num_hidden_layers=2)

    def make(self):
        return hf.DecoderAttention(32, 4, 4, 10000.0, rotary=4, qkv_bias=True, o_bias=True,
                                   out="dense", divide=True)

    def extra(self):  # the parallel block's one norm: outside the attention
        return {f"model.layers.1.input_layernorm.{k}": torch.rand(32) for k in ("weight", "bias")}


class HfCohere(HfDecoder):  # interleaved RoPE pairs, GQA, parallel block
    d_model = 32
    config = dict(model_type="cohere", hidden_size=32, num_attention_heads=4,
                  num_key_value_heads=2, rope_theta=10000.0, use_qk_norm=False,
                  attention_bias=False, layer_norm_eps=1e-5, logit_scale=0.0625,
                  num_hidden_layers=2)

    def make(self):
        return hf.DecoderAttention(32, 4, 2, 10000.0, interleaved=True)


class HfClipText(HfCase):  # CLIP's text tower: causal; config.json's text_config
    path, d_model, causal, seq, layer = "text_model.encoder.layers.{}.self_attn", 32, True, 6, \
        "text_model.1"
    config = dict(model_type="clip", text_config=dict(hidden_size=32, num_attention_heads=4,
                                                      layer_norm_eps=1e-5, num_hidden_layers=2),
                  vision_config=dict(hidden_size=48, num_attention_heads=3, layer_norm_eps=1e-5,
                                     num_hidden_layers=2))

    def make(self):
        return hf.EncoderAttention(32, 4, causal=True)

    def extra(self):  # a vision tower beside it, which --layer text_model.1 passes by
        return {f"vision_model.encoder.layers.1.self_attn.{k}": t
                for k, t in hf.EncoderAttention(48, 3).state_dict().items()}


class HfSiglipVision(HfCase):  # SigLIP's vision tower: no mask; config.json's vision_config
    path, d_model, seq, layer = "vision_model.encoder.layers.{}.self_attn", 48, 6, "vision_model.1"
    config = dict(model_type="siglip", text_config=dict(hidden_size=32, num_attention_heads=4),
                  vision_config=dict(hidden_size=48, num_attention_heads=3,
                                     layer_norm_eps=1e-6))

    def make(self):
        return hf.EncoderAttention(48, 3)


class HfDinov2(HfCase):  # ViT's names; layer_scale and the norms outside
    path, d_model = "encoder.layer.{}.attention", 32
    config = dict(model_type="dinov2", hidden_size=32, num_attention_heads=4, qkv_bias=True,
                  layerscale_value=1.0, layer_norm_eps=1e-6)

    def make(self):
        return hf.ViTAttention(32, 4)


class HfDeit(HfCase):  # ViT's names
    path, d_model = "deit.encoder.layer.{}.attention", 32
    config = dict(model_type="deit", hidden_size=32, num_attention_heads=2, qkv_bias=True,
                  layer_norm_eps=1e-12)

    def make(self):
        return hf.ViTAttention(32, 2)


class HfWav2vec2(HfCase):  # encoder.layers.N.attention: q/k/v/out_proj, every bias, no mask
    path, d_model = "wav2vec2.encoder.layers.{}.attention", 32
    config = dict(model_type="wav2vec2", hidden_size=32, num_attention_heads=4,
                  do_stable_layer_norm=False, layer_norm_eps=1e-5)

    def make(self):
        return hf.EncoderAttention(32, 4)


class HfHubert(HfWav2vec2):
    path = "hubert.encoder.layers.{}.attention"
    config = dict(HfWav2vec2.config, model_type="hubert")


class HfBloom(HfCase):  # ALiBi, query_key_value per head, the block's input_layernorm as pre-LN
    path, d_model, causal, seq = "transformer.h.{}", 32, True, 7
    config = dict(model_type="bloom", hidden_size=32, n_head=4, n_layer=2,
                  layer_norm_epsilon=1e-5, apply_residual_connection_post_layernorm=False,
                  pretraining_tp=1, slow_but_exact=False)

    def make(self):
        return hf.BloomBlockAttention(32, 4, 1e-5)

    def build(self):
        module = super().build()
        with torch.no_grad():  # the block's LayerNorm away from its init
            module.input_layernorm.weight.uniform_(0.5, 1.5)
            module.input_layernorm.bias.uniform_(-0.5, 0.5)
        return module


class HfGemma2(HfCase):  # layer 2: even, so sliding (window 4); a soft cap of 2 bites at these scores
    path, d_model, causal, seq, layer = "model.layers.{}.self_attn", 24, True, 7, 2
    config = dict(model_type="gemma2", hidden_size=24, num_attention_heads=2, num_key_value_heads=1,
                  head_dim=16, query_pre_attn_scalar=12, rope_theta=10000.0, sliding_window=4,
                  attn_logit_softcapping=2.0, final_logit_softcapping=30.0, rms_norm_eps=1e-6,
                  attention_bias=False, num_hidden_layers=3, max_position_embeddings=64)

    def make(self):
        return hf.Gemma2Attention(24, 2, 1, 16, 12, 10000.0, 2.0, 4)

    def extra(self):  # the sandwich norms: outside the attention, not exported
        return {f"model.layers.2.{n}.weight": torch.rand(24) - 0.5
                for n in ("input_layernorm", "post_attention_layernorm")}


class HfFalcon(HfCase):  # Falcon-7B's layout: multi-query (one key and value), no biases
    path, d_model, causal, seq = "transformer.h.{}.self_attention", 32, True, 6
    config = dict(model_type="falcon", hidden_size=32, num_attention_heads=4, multi_query=True,
                  new_decoder_architecture=False, alibi=False, bias=False, parallel_attn=True,
                  rope_theta=10000.0, layer_norm_epsilon=1e-5, num_hidden_layers=2)

    def make(self):
        return hf.FalconAttention(32, 4, 1, "multi_query", 10000.0, False)


class HfFalconGrouped(HfCase):  # Falcon-40B/180B's: new_decoder_architecture, kv groups, biases
    path, d_model, causal, seq = "transformer.h.{}.self_attention", 32, True, 6
    config = dict(model_type="falcon", hidden_size=32, num_attention_heads=4, num_kv_heads=2,
                  new_decoder_architecture=True, alibi=False, bias=True, parallel_attn=True,
                  rope_theta=10000.0, layer_norm_epsilon=1e-5, num_hidden_layers=2)

    def make(self):
        return hf.FalconAttention(32, 4, 2, "grouped", 10000.0, True)


class HfBigcode(HfCase):  # StarCoder's multi-query c_attn (a Linear), learned positions outside
    path, d_model, causal, seq = "transformer.h.{}.attn", 32, True, 6
    config = dict(model_type="gpt_bigcode", n_embd=32, n_head=4, n_layer=2, n_positions=64,
                  multi_query=True, scale_attn_weights=True, attention_softmax_in_fp32=True,
                  scale_attention_softmax_in_fp32=True, layer_norm_epsilon=1e-5)

    def make(self):
        return hf.GPTBigCodeAttention(32, 4)


def randomize_norms(module):
    """QK-norm and T5 norm weights away from their init (ones; Gemma's zeros), so that a
    forgotten weight or a missing (1 + w) shows; RMSNorm eps as configured."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, hf.RMSNorm):
                m.weight.uniform_(-0.5, 0.5) if m.unit_offset else m.weight.uniform_(0.5, 1.5)
            elif isinstance(m, hf.T5LayerNorm):
                m.weight.uniform_(0.5, 1.5)
    return module.eval()


class HfQwen3(HfCase):  # head_dim 8 with 4 heads over hidden 24; per-head q_norm/k_norm; GQA
    path, d_model, causal, seq, crosscheck = "model.layers.{}.self_attn", 24, True, 7, True
    config = dict(model_type="qwen3", hidden_size=24, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=8, rope_theta=1000000.0, rms_norm_eps=1e-6,
                  attention_bias=False, num_hidden_layers=2, intermediate_size=48,
                  max_position_embeddings=64, use_sliding_window=False, sliding_window=None,
                  layer_types=["full_attention", "full_attention"], vocab_size=32)

    def make(self):
        return hf.Qwen3Attention(24, 4, 2, 8, 1000000.0, 1e-6)


class HfGemma3(HfCase):  # layer 1 sliding (window 4, local RoPE base); (1 + w) QK-norm
    path, d_model, causal, seq, crosscheck = "model.layers.{}.self_attn", 24, True, 7, True
    config = dict(model_type="gemma3_text", hidden_size=24, num_attention_heads=2,
                  num_key_value_heads=1, head_dim=16, query_pre_attn_scalar=12,
                  rope_theta=1000000.0, rope_local_base_freq=10000.0, sliding_window=4,
                  layer_types=["full_attention", "sliding_attention"], rms_norm_eps=1e-6,
                  attn_logit_softcapping=None, final_logit_softcapping=None, rope_scaling=None,
                  attention_bias=False, num_hidden_layers=2, intermediate_size=48,
                  max_position_embeddings=64, vocab_size=32)

    def make_layer(self, i):
        sliding = self.config["layer_types"][i] == "sliding_attention"
        return hf.Gemma3Attention(24, 2, 1, 16, 12, 10000.0 if sliding else 1000000.0, 1e-6,
                                  4 if sliding else 0)

    def extra(self):  # the sandwich norms: outside the attention, not exported
        return {f"model.layers.1.{n}.weight": torch.rand(24) - 0.5
                for n in ("input_layernorm", "post_attention_layernorm")}


class HfOlmo2(HfCase):  # q_norm [H * hd], k_norm [Hkv * hd] over the whole projection
    path, d_model, causal, seq, crosscheck = "model.layers.{}.self_attn", 32, True, 6, True
    config = dict(model_type="olmo2", hidden_size=32, num_attention_heads=4,
                  num_key_value_heads=2, rope_theta=500000.0, rms_norm_eps=1e-5,
                  attention_bias=False, num_hidden_layers=2, intermediate_size=64,
                  max_position_embeddings=64, rope_scaling=None, vocab_size=32)

    def make(self):
        return hf.Olmo2Attention(32, 4, 2, 500000.0, 1e-5)

    def extra(self):
        return {"model.layers.1.post_attention_layernorm.weight": torch.rand(32) + 0.5}


T5_CONFIG = dict(model_type="t5", d_model=16, d_kv=8, num_heads=4, num_layers=2,
                 num_decoder_layers=2, d_ff=32, relative_attention_num_buckets=8,
                 relative_attention_max_distance=6, layer_norm_epsilon=1e-6,
                 feed_forward_proj="relu", is_encoder_decoder=True, vocab_size=32)


class HfT5(HfCase):
    """T5's block N layer 0 (T5LayerSelfAttention: x + SelfAttention(layer_norm(x))) of the
    `stack`; d_kv 8 x 4 heads = 32 over d_model 16; the bias table of block 0 of the same stack,
    8 buckets, max_distance 6 (both bucket ranges, exact and logarithmic, and the clamp within
    S = 8). The checkpoint holds both stacks' blocks 0 and 1; exported with --layer STACK.1."""
    d_model, seq, crosscheck, config = 16, 8, True, T5_CONFIG

    def __init__(self, name):
        self.layer = f"{self.stack}.1"
        self.path = f"{self.stack}.block.{{}}.layer.0"
        super().__init__(name)

    def make_layer(self, i):
        c = self.config
        return randomize_norms(hf.T5LayerSelfAttention(
            16, 8, 4, self.causal, i == 0, c["layer_norm_epsilon"],
            c["relative_attention_num_buckets"], c["relative_attention_max_distance"]))

    def build(self):
        self.other = self.make_layer(0)
        torch.manual_seed(zlib.crc32(self.name.encode()) + 7)
        other = "decoder" if self.stack == "encoder" else "encoder"
        self.rest = {f"{other}.block.{i}.layer.0": randomize_norms(hf.T5LayerSelfAttention(
            16, 8, 4, other == "decoder", i == 0, 1e-6, 8, 6)) for i in (0, 1)}
        return self.make_layer(1)

    def checkpoint(self, tmp):
        state = {}
        layers = dict(self.rest, **{self.path.format(0): self.other,
                                    self.path.format(1): self.module})
        for prefix, m in sorted(layers.items()):
            state.update({f"{prefix}.{k}": t for k, t in m.state_dict().items()})
        return write_folder(tmp / self.name, self.config, state, self.fmt)

    def run(self, m, q, k, v):  # block 1 with the bias (and causal mask) of block 0, as T5Stack
        bias = self.other.SelfAttention.position_bias(q.shape[1], q.dtype)
        return m(q, bias)[0]

    def bucket_table(self):
        s = self.seq
        rel = torch.arange(-(s - 1), s)
        c = self.config
        table = hf.relative_position_bucket(rel, not self.causal,
                                            c["relative_attention_num_buckets"],
                                            c["relative_attention_max_distance"])
        mine = relative_bucket(rel, not self.causal, c["relative_attention_num_buckets"],
                               c["relative_attention_max_distance"])
        if not torch.equal(table, mine):
            sys.exit(f"{self.name}: the exporter's relative_bucket differs from "
                     f"_relative_position_bucket: {mine.tolist()} vs {table.tolist()}")
        return table


class HfT5Encoder(HfT5):  # bidirectional buckets, no mask
    stack = "encoder"


class HfT5Decoder(HfT5):  # causal buckets and the causal mask
    stack, causal = "decoder", True


CASES = [("nn_mha", NnMha), ("nn_mha_int8", NnMhaInt8), ("nn_mha_kvdim", NnMhaKvdim),
         ("encoder_layer", EncoderLayer),
         ("torchscale", Torchscale), ("hf_gqa", HfGqa), ("labml", Labml), ("blog", Blog),
         ("blog_columns", BlogColumns), ("per_head", PerHead), ("hf_bert", HfBert),
         ("hf_vit", HfVit), ("hf_distilbert", HfDistilbert), ("hf_gpt2", HfGpt2),
         ("hf_neox", HfNeox), ("hf_gptj", HfGptj), ("hf_phi3", HfPhi3), ("hf_mistral", HfMistral),
         ("hf_qwen3", HfQwen3), ("hf_gemma3", HfGemma3), ("hf_olmo2", HfOlmo2),
         ("hf_t5_encoder", HfT5Encoder), ("hf_t5_decoder", HfT5Decoder), ("hf_llama31", HfLlama31),
         ("hf_qwen2_yarn", HfQwen2Yarn), ("hf_longrope", HfLongrope), ("hf_granite", HfGranite),
         ("hf_starcoder2", HfStarcoder2), ("hf_olmo", HfOlmo), ("hf_stablelm", HfStablelm),
         ("hf_phi", HfPhi), ("hf_cohere", HfCohere), ("hf_clip_text", HfClipText),
         ("hf_siglip_vision", HfSiglipVision), ("hf_dinov2", HfDinov2), ("hf_deit", HfDeit),
         ("hf_wav2vec2", HfWav2vec2), ("hf_hubert", HfHubert), ("hf_bloom", HfBloom),
         ("hf_gemma2", HfGemma2), ("hf_falcon", HfFalcon), ("hf_falcon_grouped", HfFalconGrouped),
         ("hf_bigcode", HfBigcode)]
HF_REFERENCE_ROWS = 6  # the HF cases' reference export (a second run, checked here only)


def export(case, tmp, out="fixtures", extra=()):
    """Runs the exporter on the saved checkpoint as a user would; returns the command line."""
    if isinstance(case, HfCase):
        source, where = [str(case.checkpoint(tmp)), "--layer", str(case.layer)], []
    else:
        checkpoint = tmp / f"{case.name}.pt"
        torch.save(case.saved(), checkpoint)
        source, where = [str(checkpoint), "--prefix", case.prefix], case.flags
    cmd = ["/usr/bin/python3", "../../lib/export/emha_export.py", *source, *where, *extra,
           "--max-batch", str(BATCH), "--max-seq-q", str(case.seq),
           "--name", f"export_fixtures::{case.name}", "--header", f"{out}/{case.name}.hpp",
           "--blob", f"{out}/{case.name}.bin"]
    if "--max-seq-kv" not in case.flags:
        cmd += ["--max-seq-kv", str(case.seq)]
    done = subprocess.run(cmd, cwd=HERE, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{case.name}: the exporter failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout.strip()


def check_reference(case, blob=None):
    """The blob's reference output against the real module's float64 output; max |difference|."""
    header, tensors = read_blob((blob or OUT_DIR / f"{case.name}.bin").read_bytes())
    if 16 not in tensors:
        return None
    x = torch.from_numpy(tensors[16].copy()).double()[None]
    with torch.no_grad():
        truth = case.ref_run(float64_copy(case.module), x)[0].numpy()
    err = float(np.abs(tensors[17].astype(np.float64) - truth).max())
    if err > REF_TOLERANCE:
        sys.exit(f"{case.name}: the blob's reference output differs from the module's by {err:.3e}")
    return err


def expected_header(case, arrays):
    b = lambda v: "true" if v else "false"  # noqa: E731
    self_attention = case.kdim is None
    seq_kv = case.seq_kv or case.seq
    has_reference = "--reference-rows" in case.flags
    how = (f"a Hugging Face folder ({case.fmt}), exported with: --layer {case.layer}"
           if isinstance(case, HfCase) else
           f"{'a whole module' if case.whole_module else 'a state_dict'}, exported with: "
           f"{' '.join(case.flags)}")
    lines = [
        f"// Generated by tests/export/gen_roundtrip.py (torch {torch.__version__}). Do not edit.",
        "#pragma once", "#include <cstddef>", "", f'#include "{case.name}.hpp"', "",
        f"namespace export_fixtures::{case.name} {{",
        f"// {type(case.module).__name__} saved as {how}",
        "struct expected {",
        f'  static constexpr const char* name = "{case.name}";',
        f'  static constexpr const char* blob = "{case.name}.bin";  // beside this header',
        "  // The exported header's members, for a test templated on this struct.",
        "  using config = Config;",
        "  static emha::MhaWeights header_weights() noexcept { return weights(); }",
        f"  static constexpr bool has_reference = {b(has_reference)};",
    ] + ([
        "  // Weights int8 (Config::weight_type): out and out_f64 are the DEQUANTIZED module's",
        "  // (projection weights q * scale), torch float32's and float64's forward on them.",
        "  static constexpr bool int8_weights = true;",
    ] if getattr(case, "int8", False) else []) + ([
        "  static constexpr const float* reference_input = ref_input;",
        "  static constexpr const float* reference_output = ref_output;",
        "  static constexpr std::size_t reference_rows = ref_rows;",
        "  static constexpr bool reference_causal = ref_causal;",
    ] if has_reference else []) + [
        f"  static constexpr std::size_t batch = {BATCH}, seq_q = {case.seq}, seq_kv = {seq_kv};",
        f"  static constexpr bool self_attention = {b(self_attention)};  "
        "// key and value are the query tensor",
        f"  static constexpr bool causal = {b(case.causal)};  // the test sets emha's causal mask",
        f"  static constexpr float scale = {array_member_scale(case.scale)};  "
        "// ForwardOptions::scale: 0 = 1/sqrt(d_k)",
        "  // query [batch, seq_q, d_model], key [batch, seq_kv, kdim], value [batch, seq_kv, vdim],",
        "  // out / out_f64 [batch, seq_q, d_model]: batch-first (Layout::batch_first)",
    ]
    if isinstance(case, HfT5):  # T5's bucket of each relative position key - query
        table = case.bucket_table()
        c = case.config
        lines += [
            "  // _relative_position_bucket(relative_position, bidirectional, num_buckets, "
            "max_distance) of",
            f"  // relative_position = key - query = {-(case.seq - 1)} .. {case.seq - 1} "
            f"(bucket_table[i] is position i - {case.seq - 1}),",
            "  // from the module's re-implementation (float32 log, as HF) and the exporter's own.",
            f"  static constexpr bool relative_bidirectional = {b(not case.causal)};",
            f"  static constexpr std::size_t relative_buckets = "
            f"{c['relative_attention_num_buckets']}, relative_max_distance = "
            f"{c['relative_attention_max_distance']};",
            f"  static constexpr int bucket_table_first = {-(case.seq - 1)};",
            f"  static constexpr int bucket_table[{len(table)}] = {{"
            + ", ".join(str(int(v)) for v in table) + "};"]
    for member, arr in arrays.items():
        if self_attention and member in ("key", "value"):
            lines.append(f"  static constexpr const float (&{member})[{arr.size}] = query;")
        else:
            lines += array_member(member, arr, set())
    lines += ["};", f"}}  // namespace export_fixtures::{case.name}", ""]
    return "\n".join(lines)


def write_crosscheck(case, folder, q, out64):
    """hf_folders/<case>/: the checkpoint folder the exporter read, and expected.json (the input
    and the re-implementation's float64 output) for hf_crosscheck.py."""
    dest = CROSSCHECK_DIR / case.name
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(folder, dest)
    prefix = case.path.format(1)
    (dest / "expected.json").write_text(json.dumps(dict(
        case=case.name, module=type(case.module).__name__, layer=case.layer, prefix=prefix,
        causal=case.causal, torch=torch.__version__,
        input=q.double().tolist(), out_f64=out64.tolist()), indent=None) + "\n")


def array_member_scale(scale):
    return "0.0f" if scale == 0 else float(np.float32(scale)).hex() + "f"


def main():
    OUT_DIR.mkdir(exist_ok=True)
    print(f"{'case':14s} {'blob':>6s} {'header':>7s}  ref - module f64   module f32 - f64")
    with tempfile.TemporaryDirectory() as tmp:
        for name, kind in CASES:
            case = kind(name)
            said = export(case, pathlib.Path(tmp))
            if getattr(case, "int8", False):
                case.check_blob(OUT_DIR / f"{name}.bin")
            ref_err = check_reference(case)
            if isinstance(case, HfCase):  # the exporter's float64 reference vs the module's
                ref_flags = ["--reference-rows", str(HF_REFERENCE_ROWS)] + \
                    (["--reference-causal"] if case.causal else [])
                export(case, pathlib.Path(tmp), tmp, ref_flags)
                ref_err = check_reference(case, pathlib.Path(tmp) / f"{name}.bin")
                print(f"  {said}")
            g = torch.Generator().manual_seed(zlib.crc32(name.encode()) + 1)
            q = torch.randn(BATCH, case.seq, case.d_model, generator=g)
            k = v = q
            if case.kdim is not None:
                k = torch.randn(BATCH, case.seq_kv, case.kdim, generator=g)
                v = torch.randn(BATCH, case.seq_kv, case.vdim, generator=g)
            with torch.no_grad():
                out = case.run(case.module, q, k, v)
                out64 = case.run(float64_copy(case.module), q.double(), k.double(), v.double())
            arrays = {"query": q.numpy(), "key": k.numpy(), "value": v.numpy(),
                      "out": out.numpy(), "out_f64": out64.numpy()}
            assert all(np.isfinite(a).all() for a in arrays.values()), name
            (OUT_DIR / f"{name}_expected.hpp").write_text(expected_header(case, arrays))
            if isinstance(case, HfCase) and case.crosscheck:
                write_crosscheck(case, pathlib.Path(tmp) / name, q, out64)
            err = float(np.abs(out.double() - out64).max())
            sizes = [(OUT_DIR / f"{name}{s}").stat().st_size for s in (".bin", ".hpp")]
            ref = "   (none)" if ref_err is None else f"{ref_err:.3e}"
            print(f"{name:14s} {sizes[0]:6d} {sizes[1]:7d}  {ref:>16s}   {err:.3e}")
    for file, alias, int8 in (("all.hpp", "all", False), ("all_int8.hpp", "all_int8", True)):
        names = [name for name, kind in CASES if getattr(kind, "int8", False) == int8]
        (OUT_DIR / file).write_text("\n".join(
            ["// Generated by tests/export/gen_roundtrip.py. Do not edit.", "#pragma once",
             "#include <tuple>", ""] + [f'#include "{n}_expected.hpp"' for n in names] +
            ["", "namespace export_fixtures {",
             (f"// Exported with --weights int8 (Config::weight_type int8)\n" if int8 else "") +
             f"using {alias} = std::tuple<" + ", ".join(f"{n}::expected" for n in names) + ">;",
             "}  // namespace export_fixtures", ""]))


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: Apache-2.0
"""emha-export: one attention layer of a PyTorch checkpoint -> emha's weight blob and/or C++ header.

Reads CHECKPOINT: a Hugging Face model folder (config.json + model.safetensors, a sharded
model.safetensors.index.json, or pytorch_model.bin), a .safetensors file (F32/F16/BF16/F64, read
without the safetensors package), or a .pt/.bin file through torch.load(weights_only=True): a
state_dict, or a dict holding one under "state_dict". A whole module saved with torch.save(model)
needs --allow-pickle (full unpickling runs code from the file: trusted files only). The layer's
tensors are the ones under --prefix P (P = "" for a module's own state_dict), or --layer N: layer
N's attention by the family's naming (*.layers.N.self_attn, *.layer.N.attention, *.h.N.attn,
*.layers.N.attention, *.block.N.layer.0.SelfAttention); --layer encoder.N / decoder.N picks the
stack of an encoder-decoder model. Its naming family:

  nn_mha    torch.nn.MultiheadAttention: P.in_proj_weight, or P.q_proj_weight / k_proj_weight /
            v_proj_weight (kdim or vdim != embed_dim); P.in_proj_bias; P.out_proj.weight / .bias.
            add_bias_kv (P.bias_k / P.bias_v) is refused.
  proj      P.q_proj, P.k_proj, P.v_proj, P.out_proj (or HF's P.o_proj), .weight / .bias
            (torchscale, HF Llama/Mistral/Qwen3/Gemma 3/OLMo-2; GQA: k_proj/v_proj have
            kv_heads * head_dim rows); QK-norm: P.q_norm.weight, P.k_norm.weight
  labml     labml.ai: P.query.linear, P.key.linear, P.value.linear, P.output
  linear    P.linear_q, P.linear_k, P.linear_v, P.linear_final (+ P.layer_norm, post-LN by default):
            the blog encoder block, exported as its code computes: heads split by
            .view(batch * heads, -1, d_k) with no transpose (head_split flat_view; --head-split
            columns for the conventional split) and scores scaled by (d_k // heads) ** -0.5
  per_head  lists of per-head linears P.q_heads.i / P.k_heads.i / P.v_heads.i (or P.Wq.i / Wk.i /
            Wv.i), concatenated in head order; output P.output_linear (or P.Wo, P.out)

  bert      BERT/RoBERTa/ELECTRA BertAttention: P.self.query/key/value, P.output.dense, and
            P.output.LayerNorm: post-LN with the residual (eps: config.json or --norm-eps)
  vit       ViTAttention: P.attention.query/key/value, P.output.dense (its norms are outside)
  distilbert  P.q_lin, P.k_lin, P.v_lin, P.out_lin (its norms are outside)
  gpt2      GPT-2 Conv1D: P.c_attn [in, out] (columns q | k | v), P.c_proj: transposed
  neox      GPT-NeoX/Pythia: P.query_key_value rows [heads, 3, d_k] (de-interleaved), P.dense;
            RoPE on the first rotary_pct of d_k, half pairing
  phi3      Phi-3: P.qkv_proj rows q | k | v (GQA), P.o_proj; RoPE
  t5        T5Attention: P.q, P.k, P.v, P.o (no bias, head_dim d_kv, scale 1), the relative
            position bias of block 0 of the same stack (STACK.block.0.layer.0.SelfAttention.
            relative_attention_bias.weight [buckets, heads]); P's sibling layer_norm is a pre-RMSNorm
            with the residual (T5LayerSelfAttention); a decoder's is causal with causal buckets

With a config.json (a folder's, or --config), heads (num_attention_heads, n_head, n_heads,
num_heads), kv heads (num_key_value_heads), head_dim (head_dim, T5's d_kv), the position (RoPE for
the rotary families: rope_theta / rotary_emb_base, Gemma 3's rope_local_base_freq on its sliding
layers, partial_rotary_factor / rotary_pct; T5's relative_attention_num_buckets / _max_distance),
the sliding window (sliding_window, layer_types, Gemma 3's sliding_window_pattern, Qwen2's
use_sliding_window / max_window_layers), the score scale (Gemma's query_pre_attn_scalar ** -0.5;
T5's 1; GPT-2's scale_attn_weights = false and scale_attn_by_inverse_layer_idx), QK-norm (Qwen3,
Gemma 3: per head, Gemma's (1 + w); OLMo-2: over the whole projection; eps rms_norm_eps) and the
norms' eps (layer_norm_eps, layer_norm_epsilon) come from it; a flag that disagrees is an error
naming both values. Gemma 2's and Gemma 3's attn_logit_softcapping becomes
attn_logit_softcapping (Gemma 2's even layers slide). RoPE scaling (rope_scaling / rope_parameters: linear, dynamic, yarn, longrope,
llama3) as transformers computes it; dynamic and longrope only for --max-seq up to their original
length (past it transformers' angles depend on each call's length), any other rope_type or key
refused by name. Refused by name: attn_logit_softcapping outside Gemma, Gemma 3's
use_bidirectional_attention, LongT5, BERT's relative position embeddings. Gemma's sandwich norms
and OLMo-2's norm of the attention output are not one of emha's placements: the attention alone is
exported, and the line says so. On success one line on stdout says the family, prefix, dims
(head_dim), positions (the relative bias table), the score scale, QK-norm, the head split, the
norm, whether the model is causal (emha's causal mask is a forward() option) and what came from
config.json.

--family auto (the default) picks the family by the tensors present. What the tensors cannot say
comes from flags or, for a whole module, from its attributes (num_heads, LayerNorm eps,
TransformerEncoderLayer.norm_first, torchscale's xpos); a flag that disagrees with an attribute is
an error. Sizes come from the tensors: d_model from Q, kdim / vdim from the K / V weights'
columns, kv_heads from the K rows (checked against --kv-heads). Every inconsistency is an error:
exit status 1 and one line on stderr naming the tensor and both shapes; nothing is guessed (a
transposed tensor, a head count that does not divide d_model, a per-head list that is not --heads
long, a tensor under the prefix that the export would not use, a non-finite weight).

Outputs (see lib/include/emha/io/weight_blob.hpp for the blob format):
  --blob OUT.bin    the blob (format version 2; 3 with --weights int8; 4 with --quantize int8):
                    header, tensor table in id order, float32 little-endian tensors (int8
                    weights) at 64-byte aligned offsets, CRC-32. Layout 0 (PyTorch row-major) is the only layout written
                    today; the packed-panel layouts are reserved.
  --header OUT.hpp  namespace NAME { struct Config : emha::MhaConfig<...> (every member set);
                    alignas(64) inline constexpr float arrays as exact hex-float literals, tied to
                    Config by static_asserts; emha::MhaWeights weights(); the reference, if any }
  --reference-rows N  (kdim == vdim == d_model) a seeded input [N, d_model] (uniform(-1, 1)) and
                    the layer's output on it (self-attention, batch 1, --reference-causal, the
                    sliding window), computed here in float64 with the module's semantics as
                    exported (head split, score scale, QK-norm, positions, norm), stored as
                    float32: emha-run's check.
  --weights int8    the four projections' weights as int8 per output channel (a row), symmetric,
                    in [-127, 127], with a float32 scale per row (Config::weight_type int8):
                    scale = amax(|row|) / 127, q = round(w / scale), ties to even (torch.round);
                    a zero row gets scale 1 and zeros. One line per weight says max |w - q*s| /
                    max |w|, rms(w - q*s) / rms(w) and the bytes saved; the reference is the
                    dequantized layer's, and one more line says how far the quantization moves
                    it from the float module's output (max and rms). Norms, biases and tables stay float32. A checkpoint may
                    bring its own: a projection weight stored as int8 [out, in] with a float
                    <name>_scale [out] beside it (P.q_proj.weight + P.q_proj.weight_scale;
                    P.in_proj_weight + P.in_proj_weight_scale), all four projections or none,
                    exported bit for bit (no -128; every scale finite and > 0).

  --quantize int8 --calibration FILE  the full-integer layer (Config::arithmetic s8, TFLite's int8
                    semantics; the header and/or a version 4 blob): FILE holds representative inputs, a tensor [N, S,
                    d_model] or [S, d_model] (.npy or torch.save'd); the float64 module runs on each
                    sequence (causal if the family is, or with --reference-causal) and each stage's
                    range gives its scale and zero point as TFLite's post-training quantization
                    computes them; weights int8 per row, biases int32 with the input zero point
                    folded in, every (M0, shift), the softmax's parameters: the device stores no
                    float. --rounding single picks TFLite's single rounding (default double). One
                    line prints each stage's range, scale and zero point; emha_export/s8.py says
                    what is refused (positions, norms, QK-norm, windows, kdim / vdim != d_model).
  --quantize 16x8 --calibration FILE  the same for the 16x8 layer (Config::arithmetic s16x8,
                    TFLite's 16x8 scheme: int16 activations, symmetric, zero point 0; int64
                    biases; emha_export/s16x8.py): the header only, no blob format yet.

Examples:
  emha_export.py attn.pt --prefix layers.0.self_attn --heads 8 --blob attn.bin --header attn.hpp
  emha_export.py ./pythia-70m --layer 3 --max-seq-q 128 --blob p3.bin   # HF folder, config.json
  emha_export.py encoder.pt --prefix layers.0.self_attn --norm post --norm-prefix layers.0.norm1 \\
      --allow-pickle --blob enc.bin    # a whole nn.TransformerEncoder, post-LN
  emha_export.py llama.pt --prefix model.layers.0.self_attn --heads 32 --kv-heads 8 \\
      --position rope --rope-base 500000 --norm pre --norm-kind rms_norm \\
      --norm-prefix model.layers.0.input_layernorm --norm-eps 1e-5 --header llama0.hpp
  emha_export.py ts.pt --prefix attn --heads 4 --position xpos --norm sub --reference-rows 8 \\
      --blob ts.bin                                    # torchscale: xPos, sub-LN inner_attn_ln
  emha_export.py ./t5-small --layer decoder.2 --max-seq-q 64 --blob t5d2.bin   # T5 decoder
  emha_export.py attn.pt --prefix attn --heads 8 --weights int8 --blob attn8.bin --header attn8.hpp
  emha_export.py attn.pt --prefix attn --heads 8 --quantize int8 --calibration calib.pt \\
      --header attn_s8.hpp --blob attn_s8.bin          # full-integer int8, no float on the device
"""
import argparse
import pathlib
import re
import sys

from . import rope_scaling as rs
from . import s8, s16x8
from .checkpoint import Checkpoint
from .errors import ExportError, fail
from .families import FAMILIES
from .int8 import PROJECTIONS, dequantize, output_report, quantize, report
from .layer import build_layer
from .reference import make_reference, reference_forward
from .write import HEAD_SPLIT, NORM, NORM_KIND, PAIRING, POSITION, blob_bytes, header_text


# --------------------------------------------------------------------------------------------------

def parse_args(argv):
    a = argparse.ArgumentParser(prog="emha_export.py", description=__doc__.split("\n")[0],
                                epilog=__doc__.split("\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("checkpoint")
    a.add_argument("--prefix", default="", help="the attention module's name in the state_dict")
    a.add_argument("--layer", help="layer N's attention module by the family's naming (instead "
                   "of --prefix); STACK.N (encoder.N, decoder.N) in an encoder-decoder model")
    a.add_argument("--config", help="a config.json to read (default: the model folder's)")
    a.add_argument("--allow-pickle", action="store_true",
                   help="load a whole pickled module (runs code from the file: trusted files only)")
    a.add_argument("--heads", type=int)
    a.add_argument("--kv-heads", type=int)
    a.add_argument("--family", default="auto", choices=["auto"] + list(FAMILIES))
    a.add_argument("--position", choices=list(POSITION))
    a.add_argument("--rope-pairing", choices=list(PAIRING), help="default half")
    a.add_argument("--rope-dims", type=int, default=0, help="rotated dims per head (0: all d_k)")
    a.add_argument("--rope-base", type=float, help="default 10000")
    a.add_argument("--xpos-scale-base", type=float)
    a.add_argument("--sliding-window", type=int, help="default 0 (none)")
    a.add_argument("--head-dim", type=int, help="per-head width (default: config.json's "
                   "head_dim, else Q's rows / heads)")
    a.add_argument("--scale", type=float, help="the score scale (default: config.json's, the "
                   "linear family's (d_k // heads) ** -0.5, else 1/sqrt(head_dim))")
    a.add_argument("--head-split", choices=list(HEAD_SPLIT), help="default flat_view for the "
                   "linear family (the blog block's .view as written), columns otherwise")
    a.add_argument("--qk-norm-eps", type=float, help="QK-norm eps (default config.json's "
                   "rms_norm_eps)")
    a.add_argument("--qk-norm-unit-offset", action="store_true",
                   help="QK-norm x_hat * (1 + w) (Gemma) without a config.json")
    a.add_argument("--relative-max-distance", type=int, help="T5's relative_attention_max_"
                   "distance without a config.json (default 128)")
    a.add_argument("--norm", choices=list(NORM))
    a.add_argument("--norm-kind", choices=list(NORM_KIND))
    a.add_argument("--norm-prefix")
    a.add_argument("--norm-eps", type=float)
    a.add_argument("--max-seq-q", type=int, default=0, help="default max(64, --reference-rows)")
    a.add_argument("--max-seq-kv", type=int, default=0, help="default --max-seq-q")
    a.add_argument("--max-batch", type=int, default=1)
    a.add_argument("--max-threads", type=int, default=1)
    a.add_argument("--no-prepack", action="store_true", help="prepack_weights = false (MCU, flash)")
    a.add_argument("--no-attention-weights", action="store_true")
    a.add_argument("--name", help="the header's namespace (default: the output file's stem)")
    a.add_argument("--section", help="[[gnu::section(SECTION)]] on the header's arrays")
    a.add_argument("--header")
    a.add_argument("--blob")
    a.add_argument("--reference-rows", type=int, default=0)
    a.add_argument("--reference-causal", action="store_true")
    a.add_argument("--seed", type=int, default=0, help="the reference input's seed")
    a.add_argument("--weights", choices=["float32", "int8"], default="float32",
                   help="the projections' weights: float32, or int8 per output channel with a "
                   "float scale per row (W8A32)")
    a.add_argument("--quantize", choices=["int8", "16x8"],
                   help="the full-integer layer (Config::arithmetic s8; 16x8: s16x8), calibrated on "
                   "--calibration")
    a.add_argument("--calibration", help="--quantize's representative inputs: a tensor [N, S, d_model] "
                   "or [S, d_model] (.npy, or a torch.save'd tensor)")
    a.add_argument("--rounding", choices=["double", "single"], default="double",
                   help="--quantize's requantization rounding (default double: TFLite's, CMSIS-NN's)")
    args = a.parse_args(argv)
    if args.quantize and not args.calibration:
        a.error(f"--quantize {args.quantize} needs --calibration FILE")
    if args.calibration and not args.quantize:
        a.error("--calibration is --quantize's")
    if args.quantize and (args.weights != "float32" or args.reference_rows):
        a.error(f"--quantize {args.quantize} takes no --weights int8 or --reference-rows")
    if not args.header and not args.blob:
        a.error("nothing to write: give --header and/or --blob")
    if (args.sliding_window or 0) < 0 or args.reference_rows < 0:
        a.error("--sliding-window and --reference-rows must not be negative")
    if args.head_dim is not None and args.head_dim <= 0:
        a.error("--head-dim must be positive")
    return args


def namespace_name(args):
    name = args.name or pathlib.Path(args.header or args.blob).stem
    if not args.name:
        name = re.sub(r"\W", "_", name)
        name = "_" + name if name[0].isdigit() else name
    if not re.fullmatch(r"[A-Za-z_]\w*(::[A-Za-z_]\w*)*", name):
        fail(f"--name {name!r} is not a C++ namespace name")
    return name


def summary(cfg, ck, args):
    """The one line said on success."""
    c = cfg
    dims = (f"d_model {c['d_model']}, heads {c['heads']}, kv_heads {c['kv_heads']}, head_dim {c['d_k']}"
            + ("" if c['d_k'] * c['heads'] == c['d_model'] else " (decoupled from d_model / heads)")
            + (f", kdim {c['kdim']}, vdim {c['vdim']}" if (c['kdim'], c['vdim']) != (c['d_model'],) * 2
               else ""))
    pos = c["position"]
    if pos == "rope":
        pos += (f" ({c['rope_pairing']} pairing, {c['rope_dims']} of {c['d_k']} dims, "
                f"base {c['rope_base']:g}{rs.describe(c.get('rope_scaling'))})")
    elif pos == "xpos":
        pos += f" (scale base {c['xpos_scale_base']:g})"
    elif pos == "relative_bias":
        pos += (f" ({c['relative_from']} [{c['relative_buckets']}, {c['heads']}], max_distance "
                f"{c['relative_max_distance']}, "
                f"{'bidirectional' if c['relative_bidirectional'] else 'causal'} buckets)")
    if c["sliding_window"]:
        pos += f", sliding window {c['sliding_window']}"
    scale = (f"scale {c['scale']:.9g}" + (f" ({c['scale_from']})" if c["scale_from"] else "")
             if c["scale"] else "scale 1/sqrt(head_dim)")
    if c.get("softcap"):
        scale += f", soft cap {c['softcap']:g} ({c['softcap_from']}: cap * tanh(s / cap))"
    qk = "none" if c["qk_norm"] == "none" else \
        (f"{c['qk_norm']} rms_norm eps {c['qk_norm_eps']:g}"
         + (" x_hat * (1 + w)" if c["qk_norm_unit_offset"] else ""))
    split = "head split " + ("flat_view (the blog's .view(batch * heads, -1, d_k) as written; "
                             "--head-split columns for the conventional split)"
                             if c["head_split"] == "flat_view" else "columns")
    if c["family"] == "linear" and c["head_split"] == "columns":
        split += " (--head-split columns)"
    norm = "none" if c["norm"] == "none" else \
        f"{c['norm']} {c['norm_kind']} eps {c['norm_eps']:g}"
    told = (f"; from {c['config_file']}: {', '.join(c['from_config'])}" if c["config_file"]
            and c["from_config"] else (f"; {c['config_file']} gave nothing" if c["config_file"]
                                       else ""))
    causal = "; causal: pass masks.causal = true" if c["causal"] else ""
    weights = ("; weights int8 per output channel (symmetric, [-127, 127], a float scale per row)"
               if c["weight_type"] == "int8" else "")
    outside = (f"; attention only: the block's {c['outside_norms']} is not part of emha's layer "
               "(its norm is none, pre, post or sub): apply it outside" if c["outside_norms"] else "")
    assumed = "".join(f"; assumed: {a}" for a in c["assumed"])
    wrote = " and ".join(f for f in (args.header, args.blob) if f)
    return (f"emha-export: {c['family']} '{c['prefix']}' of {ck.file.name}: {dims}; positions "
            f"{pos}; {scale}; qk-norm {qk}; {split}; norm {norm}{outside}{causal}{weights}{told}"
            f"{assumed}; wrote {wrote}")


def int8_weights(cfg, tensors):
    """--weights int8: the tensors to write (each projection's weight as <name>_int8 and
    <name>_scale) and the lines to print; `tensors`' weights become the dequantized ones, which the
    reference is computed with. A checkpoint's own int8 weights are taken as they are."""
    given = cfg["given_scales"]
    written, lines = dict(tensors), []
    for key in PROJECTIONS:
        if key not in tensors:
            continue
        w = tensors[key]
        if given is not None:
            q, scale, zero_rows = w.char(), given[key], 0  # exact: w holds the int8 values
        else:
            q, scale, zero_rows = quantize(w)
        lines.append(report(key, w, q, scale, zero_rows, given is not None))
        tensors[key] = dequantize(q, scale)
        del written[key]
        written[key + "_int8"], written[key + "_scale"] = q, scale
    return written, lines


def main_s8(args, ck, cfg, tensors, name):
    """--quantize int8 or 16x8: the integer layer's header (and, for int8, its blob)."""
    if args.quantize == "16x8" and args.blob:
        fail(f"--blob {args.blob}: the 16x8 layer (--quantize 16x8) has no blob format yet; write --header")
    single = args.rounding == "single"
    cfg["weight_type"] = "f32"  # the integer layers' weights are their own (summary: no W8A32 words)
    s8.check_supported(cfg, args.quantize)
    x = s8.load_calibration(args.calibration, cfg["d_model"])
    part = s16x8 if args.quantize == "16x8" else s8
    qz, lines = part.quantize_layer(cfg, tensors, x, cfg["causal"] or args.reference_causal, single)
    source = pathlib.Path(args.checkpoint).name + (f" ({cfg['prefix']})" if cfg["prefix"] else "")
    if args.header:
        pathlib.Path(args.header).write_text(part.header_text(cfg, qz, name, args.section, source, single))
    if args.blob:
        pathlib.Path(args.blob).write_bytes(s8.blob_bytes(cfg, qz, single))
    for line in lines:
        print(line)
    arithmetic = "s16x8" if args.quantize == "16x8" else "s8"
    print(summary(cfg, ck, args) + f"; arithmetic {arithmetic} ({args.rounding} rounding)")
    return 0


def main(argv):
    args = parse_args(argv)
    ck = Checkpoint(args.checkpoint, args.allow_pickle, args.config)
    cfg, tensors = build_layer(ck, args)
    name = namespace_name(args)
    if args.quantize:
        return main_s8(args, ck, cfg, tensors, name)
    cfg["weight_type"] = "int8" if args.weights == "int8" else "f32"
    written, lines = tensors, []
    float_tensors = dict(tensors)  # the float module's, before int8_weights dequantizes them
    if cfg["weight_type"] == "int8":
        written, lines = int8_weights(cfg, tensors)
    elif cfg["given_scales"] is not None:
        fail(f"{sorted(ck.int8_read)[0]} is int8 (with its _scale): export the checkpoint's int8 "
             "weights with --weights int8 (bit for bit)")
    ref = None
    if args.reference_rows:
        if cfg["kdim"] != cfg["d_model"] or cfg["vdim"] != cfg["d_model"]:
            fail(f"--reference-rows is self-attention: kdim {cfg['kdim']} and vdim {cfg['vdim']} "
                 f"must equal d_model {cfg['d_model']}")
        x, out = make_reference(cfg, tensors, args.reference_rows, args.reference_causal, args.seed)
        ref = (x, out, args.reference_causal)
        if cfg["weight_type"] == "int8" and cfg["given_scales"] is None:
            lines.append(output_report(reference_forward(cfg, tensors, x.double(), args.reference_causal),
                                       reference_forward(cfg, float_tensors, x.double(), args.reference_causal)))
    if args.blob:
        blob_tensors = dict(written, **({"ref_input": ref[0], "ref_output": ref[1]} if ref else {}))
        pathlib.Path(args.blob).write_bytes(
            blob_bytes(cfg, blob_tensors, args.reference_rows, args.reference_causal))
    if args.header:
        source = pathlib.Path(args.checkpoint).name + (f" ({cfg['prefix']})" if cfg["prefix"] else "")
        pathlib.Path(args.header).write_text(
            header_text(cfg, written, name, args.section, ref, source))
    for line in lines:
        print(line)
    print(summary(cfg, ck, args))
    return 0


def run(argv):
    """The command: main(argv), an ExportError printed on stderr with exit status 1."""
    try:
        return main(argv)
    except ExportError as e:
        print(f"emha-export: {e}", file=sys.stderr)
        return 1

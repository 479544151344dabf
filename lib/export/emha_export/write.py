# SPDX-License-Identifier: Apache-2.0
"""Writing the layer, as the weight blob and as a C++ header.

blob_bytes: lib/include/emha/io/weight_blob.hpp's format (header, tensor table, float32 tensors and
int8 weights at 64-byte aligned offsets, CRC-32): version 2 for float weights, version 3 for int8.
header_text: the Config, the arrays as exact hex-float literals (int8 weights as integers),
weights() and the reference, if any. An int8 export's tensors hold <weight>_int8 (torch.int8) and
<weight>_scale (float32 [rows]) in place of each projection's float <weight>.
"""
import struct
import zlib

import numpy as np
import torch

from . import rope_scaling as rs

POSITION = {"none": 0, "rope": 1, "xpos": 2, "alibi": 3, "relative_bias": 4}
PAIRING = {"half": 0, "interleaved": 1}
NORM = {"none": 0, "post": 1, "pre": 2, "sub": 3}
NORM_KIND = {"layer_norm": 0, "rms_norm": 1}
QK_NORM = {"none": 0, "per_head": 1, "whole": 2}
HEAD_SPLIT = {"columns": 0, "flat_view": 1}
BLOB_ID = dict(in_proj_weight=1, q_proj_weight=2, k_proj_weight=3, v_proj_weight=4, in_proj_bias=5,
               out_proj_weight=6, out_proj_bias=7, norm_weight=8, norm_bias=9, q_norm_weight=10,
               k_norm_weight=11, relative_attention_bias=12, ref_input=16, ref_output=17,
               in_proj_weight_int8=18, q_proj_weight_int8=19, k_proj_weight_int8=20,
               v_proj_weight_int8=21, out_proj_weight_int8=22, in_proj_weight_scale=24,
               q_proj_weight_scale=25, k_proj_weight_scale=26, v_proj_weight_scale=27,
               out_proj_weight_scale=28)
WEIGHT_TYPE = {"f32": 0, "int8": 1}
BLOB_VERSION = {"f32": 2, "int8": 3}  # float weights stay readable by version 2's loaders;
# a scaled RoPE or a soft cap writes version 5 (version 3 and those), which older builds refuse
HEADER_BYTES = 160
HEADER_BYTES_V5 = 176  # version 5: the RoPE scaling and the soft cap from 152


# --------------------------------------------------------------------------------------------------
# The blob (lib/include/emha/io/weight_blob.hpp)

def rope_scaling_of(cfg):
    """The layer's resolved RoPE scaling (rope_scaling.resolve), or None."""
    return cfg.get("rope_scaling") if cfg["position"] == "rope" else None


def align(n, a=64):
    return (n + a - 1) // a * a


def blob_bytes(cfg, tensors, ref_rows, ref_causal):
    entries = sorted((BLOB_ID[k], t.detach().numpy().astype("i1" if t.dtype == torch.int8
                                                             else "<f4"))
                     for k, t in tensors.items())
    table = bytearray()
    body = bytearray()
    position = cfg["position"]
    scaling = rope_scaling_of(cfg)
    softcap = cfg.get("softcap") or 0.0
    v5 = bool(scaling or softcap)  # older builds refuse either (bad_version)
    header_bytes = HEADER_BYTES_V5 if v5 else HEADER_BYTES
    offset = align(header_bytes + 16 * len(entries))
    for tid, arr in entries:
        rows, cols = (arr.shape[0], 1) if arr.ndim == 1 else arr.shape
        table += struct.pack("<4I", tid, rows, cols, offset)
        data = arr.tobytes()
        body += data + bytes(align(len(data)) - len(data))
        offset += align(len(data))
    normed = cfg["norm"] != "none"
    bias_bits = sum(1 << i for i, r in enumerate("qkvo") if cfg["bias"][r])
    version = 5 if v5 else BLOB_VERSION[cfg["weight_type"]]
    head = struct.pack(
        "<4s25I", b"EMHA", version, offset, 0, header_bytes, 1, 0, cfg["d_model"], cfg["heads"], cfg["kv_heads"],
        cfg["kdim"], cfg["vdim"], bias_bits, POSITION[position],
        PAIRING[cfg["rope_pairing"]] if position == "rope" else 0, cfg["rope_dims"], 0, 0,
        cfg["sliding_window"], NORM[cfg["norm"]], NORM_KIND[cfg["norm_kind"]] if normed else 0, 0,
        int(cfg["norm_affine"]) if normed else 0, len(entries), ref_rows, int(ref_causal))
    head = bytearray(head)
    if position == "rope":
        struct.pack_into("<f", head, 64, cfg["rope_base"])
    if position == "xpos":
        struct.pack_into("<f", head, 68, cfg["xpos_scale_base"])
    if normed:
        struct.pack_into("<f", head, 84, cfg["norm_eps"])
    qk = cfg["qk_norm"] != "none"
    relative = position == "relative_bias"
    head += struct.pack(
        "<IfIIfIIII", cfg["head_dim"], cfg["scale"], QK_NORM[cfg["qk_norm"]],
        int(cfg["qk_norm_unit_offset"]) if qk else 0, cfg["qk_norm_eps"] if qk else 0.0,
        HEAD_SPLIT[cfg["head_split"]], cfg["relative_buckets"] if relative else 0,
        cfg["relative_max_distance"] if relative else 0,
        int(cfg["relative_bidirectional"]) if relative else 0)
    if cfg["weight_type"] != "f32" or v5:
        head += struct.pack("<I", WEIGHT_TYPE[cfg["weight_type"]])
    if v5:  # 144 arithmetic f32, 148 rounding, 152 the scaling's type and its CRC, 160 the cap
        head += struct.pack("<4If", 0, 0, rs.TYPES[scaling["type"]] if scaling else 0,
                            rs.crc(scaling, cfg["rope_dims"]) if scaling else 0, softcap)
    blob = head + bytes(header_bytes - len(head)) + table
    blob += bytes(align(len(blob)) - len(blob)) + body
    assert len(blob) == offset
    struct.pack_into("<I", blob, 12, zlib.crc32(bytes(blob[16:])) & 0xFFFFFFFF)
    return bytes(blob)


# --------------------------------------------------------------------------------------------------
# The header

def hex_float(v):
    """The float32 value v as an exact C++ hex-float literal (checked to parse back bit-exact)."""
    f = np.float32(v)
    mantissa, exponent = float(f).hex().split("p")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    text = f"{mantissa}p{exponent}f"
    back = np.float32(float.fromhex(text[:-1]))
    assert back.view(np.uint32) == f.view(np.uint32), (v, text)
    return text


def cpp_bool(v):
    return "true" if v else "false"


def array_lines(name, arr, section, size_expr, what):
    int8 = arr.dtype == torch.int8
    ctype = "std::int8_t" if int8 else "float"
    values = ([f"{int(v)}," for v in arr.detach().numpy().reshape(-1)] if int8 else
              [hex_float(v) + "," for v in arr.detach().numpy().astype(np.float32).reshape(-1)])
    attr = f'[[gnu::section("{section}")]] ' if section else ""
    lines = [f"// {what}",
             f"{attr}alignas(64) inline constexpr {ctype} {name}[{len(values)}] = {{"]
    row = "   "
    for v in values:
        if len(row) + 1 + len(v) > 100:
            lines.append(row)
            row = "   "
        row += " " + v
    lines += [row, "};",
              f"static_assert(sizeof({name}) / sizeof({ctype}) == {size_expr},",
              f'              "{name} must hold {size_expr.replace("Config::", "")} '
              f'{"int8 values" if int8 else "floats"}");', ""]
    return lines


def norm_size(c, what):
    if c["norm"] == "sub":
        return "q_dim", f"[q_dim]: {what} (sub-LN, on the context)"
    return "Config::d_model", f"[d_model]: {what}"


def short_factor_lines(c):
    """longrope's short factors, which its Config's rope_scaling points to."""
    r = rope_scaling_of(c)
    if not r or r["type"] != "longrope":
        return []
    values = [hex_float(v) + "," for v in r["short_factor"]]
    return (["// rope_scaling longrope: inv_freq[i] / short_factor[i] (rotated dims / 2 factors)",
             "inline constexpr float rope_short_factor[] = {"] +
            ["    " + " ".join(values[i:i + 6]) for i in range(0, len(values), 6)] + ["};", ""])


def header_text(cfg, tensors, name, section, ref, source):
    c = cfg
    pb = c["bias"]
    qk = c["qk_norm"] != "none"
    int8 = c["weight_type"] == "int8"
    lines = [
        f"// Generated by emha_export.py from {source} (torch {torch.__version__}). Do not edit.",
        f"// Family {c['family']}; layout 0: PyTorch row-major [out_features, in_features]."] + ([
        "// Weights int8 per output channel (a row), symmetric in [-127, 127], with a float scale",
        "// per row: weight[j][p] = <name>_int8[j][p] * <name>_scale[j] (emha::WeightType::int8)."]
        if int8 else []) + [
        "#pragma once", "#include <cstddef>"] + (["#include <cstdint>"] if int8 else []) + [
        "", '#include "emha/emha.hpp"', "",
        f"namespace {name} {{", ""] + short_factor_lines(c) + [
        f"struct Config : emha::MhaConfig<{c['d_model']}, {c['heads']}, {c['max_seq_q']}, "
        f"{c['max_seq_kv']}> {{",
        f"  static constexpr std::size_t kv_heads = {c['kv_heads']};",
        f"  static constexpr std::size_t kdim = {c['kdim']};",
        f"  static constexpr std::size_t vdim = {c['vdim']};",
        f"  static constexpr std::size_t max_batch = {c['max_batch']};",
        f"  static constexpr bool bias = {cpp_bool(any(pb.values()))};",
        f"  static constexpr bool prepack_weights = {cpp_bool(c['prepack'])};",
        f"  static constexpr bool attention_weights = {cpp_bool(c['attention_weights'])};",
        f"  static constexpr std::size_t max_threads = {c['max_threads']};",
        f"  static constexpr emha::ProjectionBias projection_bias{{{cpp_bool(pb['q'])}, "
        f"{cpp_bool(pb['k'])}, {cpp_bool(pb['v'])}, {cpp_bool(pb['o'])}}};",
        f"  static constexpr emha::Position position = emha::Position::{c['position']};",
        f"  static constexpr emha::RopePairing rope_pairing = emha::RopePairing::{c['rope_pairing']};",
        f"  static constexpr std::size_t rope_dims = {c['rope_dims'] if c['position'] == 'rope' else 0};",
        f"  static constexpr float rope_base = {hex_float(c['rope_base'])};",
    ] + ([f"  static constexpr emha::RopeScalingParams rope_scaling = "
          f"{rs.cpp(rope_scaling_of(c), 'rope_short_factor')};"] if rope_scaling_of(c) else []) + [
        f"  static constexpr float xpos_scale_base = {hex_float(c['xpos_scale_base'])};",
        f"  static constexpr std::size_t sliding_window = {c['sliding_window']};",
    ] + ([f"  static constexpr float attn_logit_softcapping = {hex_float(c['softcap'])};"]
         if c.get("softcap") else []) + [
        f"  static constexpr emha::NormPlacement norm = emha::NormPlacement::{c['norm']};",
        f"  static constexpr emha::NormKind norm_kind = emha::NormKind::{c['norm_kind']};",
        f"  static constexpr float norm_eps = {hex_float(c['norm_eps'])};",
        f"  static constexpr bool norm_affine = {cpp_bool(c['norm_affine'])};",
        f"  static constexpr std::size_t head_dim = {c['head_dim']};",
        f"  static constexpr float scale = {hex_float(c['scale'])};" +
        ("  // 0: 1/sqrt(head_dim)" if not c["scale"] else ""),
        f"  static constexpr emha::QkNorm qk_norm = emha::QkNorm::{c['qk_norm']};",
        f"  static constexpr float qk_norm_eps = {hex_float(c['qk_norm_eps'] if qk else 1e-6)};",
        f"  static constexpr bool qk_norm_unit_offset = {cpp_bool(qk and c['qk_norm_unit_offset'])};",
        f"  static constexpr emha::HeadSplit head_split = emha::HeadSplit::{c['head_split']};",
        f"  static constexpr std::size_t relative_buckets = {c['relative_buckets']};",
        f"  static constexpr std::size_t relative_max_distance = {c['relative_max_distance']};",
        f"  static constexpr bool relative_bidirectional = {cpp_bool(c['relative_bidirectional'])};",
    ] + (["  static constexpr emha::WeightType weight_type = emha::WeightType::int8;"]
         if int8 else []) + [
        "};",
        "static_assert(emha::detail::check_config<Config>());", "",
        "// Widths: d_k = head_dim, q_dim = heads * d_k, kv_dim = kv_heads * d_k.",
        "inline constexpr std::size_t d_k = Config::head_dim;",
        "inline constexpr std::size_t q_dim = Config::heads * d_k;",
        "inline constexpr std::size_t kv_dim = Config::kv_heads * d_k;", "",
    ]
    bias_q = "(Config::bias && Config::projection_bias.q ? q_dim : 0)"
    bias_kv = " + ".join(f"(Config::bias && Config::projection_bias.{r} ? kv_dim : 0)" for r in "kv")
    sizes = {
        "in_proj_weight": ("(q_dim + 2 * kv_dim) * Config::d_model",
                           "rows W_q | W_k | W_v, [q_dim + 2 * kv_dim, d_model]"),
        "q_proj_weight": ("q_dim * Config::d_model", "[q_dim, d_model]"),
        "k_proj_weight": ("kv_dim * Config::kdim", "[kv_dim, kdim]"),
        "v_proj_weight": ("kv_dim * Config::vdim", "[kv_dim, vdim]"),
        "in_proj_bias": (f"{bias_q} + {bias_kv}", "the biases of Q [q_dim], K, V [kv_dim] "
                         "that have one, in that order"),
        "out_proj_weight": ("Config::d_model * q_dim", "[d_model, q_dim]"),
        "out_proj_bias": ("Config::d_model", "[d_model]"),
        "norm_weight": norm_size(c, f"the {c['norm_kind']}'s weight"),
        "norm_bias": norm_size(c, "the layer_norm's bias"),
        "q_norm_weight": ("d_k" if c["qk_norm"] == "per_head" else "q_dim",
                          f"[{'d_k' if c['qk_norm'] == 'per_head' else 'q_dim'}]: QK-norm "
                          f"({c['qk_norm']}) of Q" + (", x_hat * (1 + w)" if
                                                      c["qk_norm_unit_offset"] else "")),
        "k_norm_weight": ("d_k" if c["qk_norm"] == "per_head" else "kv_dim",
                          f"[{'d_k' if c['qk_norm'] == 'per_head' else 'kv_dim'}]: QK-norm "
                          f"({c['qk_norm']}) of K"),
        "relative_attention_bias": ("Config::relative_buckets * Config::heads",
                                    "[relative_buckets, heads]: T5's relative position bias"),
    }
    rows = {"in_proj_weight": "q_dim + 2 * kv_dim", "q_proj_weight": "q_dim",
            "k_proj_weight": "kv_dim", "v_proj_weight": "kv_dim",
            "out_proj_weight": "Config::d_model"}
    for key, r in rows.items():
        size, what = sizes[key]
        sizes[key + "_int8"] = (size, f"int8 in [-127, 127], {what}")
        sizes[key + "_scale"] = (r, f"[{r.replace('Config::', '')}]: the scale of each row of "
                                    f"{key}_int8")
    for key in BLOB_ID:
        if key in tensors:
            lines += array_lines(key, tensors[key], section, *sizes[key])
    if ref is not None:
        x, out, causal = ref
        rows = x.shape[0]
        lines += ["// The exporter's reference (self-attention, batch 1): ref_input [ref_rows, d_model]",
                  "// in, ref_output [ref_rows, d_model] out, computed in float64 with the module's",
                  "// semantics (head split, scale, QK-norm, positions, norm as exported).",
                  f"inline constexpr std::size_t ref_rows = {rows};",
                  f"inline constexpr bool ref_causal = {cpp_bool(causal)};", ""]
        lines += array_lines("ref_input", x, section, "ref_rows * Config::d_model", "[ref_rows, d_model]")
        lines += array_lines("ref_output", out, section, "ref_rows * Config::d_model", "[ref_rows, d_model]")
    lines += ["// The weights as emha reads them: pass to MultiHeadAttention<Config>::set_weights().",
              "inline emha::MhaWeights weights() noexcept {", "  emha::MhaWeights w;"]
    lines += [f"  w.{k} = {k};" for k in BLOB_ID if k in tensors and not k.startswith("ref_")]
    lines += ["  return w;", "}", "", f"}}  // namespace {name}", ""]
    return "\n".join(lines)

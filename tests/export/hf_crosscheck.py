# SPDX-License-Identifier: Apache-2.0
"""Cross-check of the re-implemented Hugging Face layers (hf_modules.py) against the real
`transformers` classes. Not part of the suite: it needs PyTorch 2.x and transformers, and no
network (each model is built from its config class on the checkpoint folder, offline).

For each folder of tests/export/hf_folders/ (written by gen_roundtrip.py: config.json,
model.safetensors, expected.json = the fixture's input and the re-implementation's float64
output), builds the family's attention class (Qwen3Attention, Gemma3Attention, Olmo2Attention,
MistralAttention, Phi3Attention, LlamaAttention and Qwen2Attention with their rope_scaling, T5LayerSelfAttention with has_relative_attention_bias=True) with
attn_implementation="eager" in float64, loads layer 1's tensors (T5: block 0's relative bias
table, as T5Stack shares it), runs it on the input with the mask HF's model builds (causal,
sliding window; T5's encoder none), and compares with the stored output. API differences across
transformers versions (position_embeddings or position_ids, cache_position, the rotary class's
signature) are tried in turn; a family that fails is reported, never fatal.

    OUT=/tmp/crosscheck python3 tests/export/hf_crosscheck.py [CASE ...]

Writes $OUT/hf_crosscheck.json (the current directory without OUT) and prints one line per case.
"""
import copy
import json
import os
import pathlib
import sys
import traceback

import numpy as np
import torch

sys.dont_write_bytecode = True
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # every config is read from its local folder
HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "lib" / "export"))
from emha_export.hf import SafeTensors  # noqa: E402 (standard library + numpy reader)

FOLDERS = HERE / "hf_folders"
TOLERANCE = 1e-5  # max |transformers - re-implementation|, float64 both (a float32 step or two)


def load_config(cls, folder):
    config = cls.from_pretrained(str(folder))  # a local folder: no network
    config._attn_implementation = "eager"
    return config


def weights(folder):
    st = SafeTensors(folder / "model.safetensors")
    return {name: st[name].double() for name in st}


def load_into(module, state, prefix, extra=None):
    """module <- state's tensors under prefix (+ extra: {module name: tensor}); strict."""
    mine = {k[len(prefix) + 1:]: v for k, v in state.items() if k.startswith(prefix + ".")}
    mine.update(extra or {})
    own = module.state_dict()
    missing = [k for k in own if k not in mine and not k.endswith("inv_freq")]
    unknown = [k for k in mine if k not in own]
    if missing or unknown:
        raise KeyError(f"missing {missing}, not in the module {unknown}")
    module.load_state_dict({k: mine.get(k, v) for k, v in own.items()})
    return module.double().eval()


def additive_mask(batch, seq, causal, window):
    """HF's 4-D additive mask [B, 1, S, S]: 0 where attended, finfo(float64).min elsewhere."""
    qi, ki = torch.arange(seq)[:, None], torch.arange(seq)[None]
    keep = ki <= qi if causal else torch.ones(seq, seq, dtype=torch.bool)
    if window:
        keep &= ki > qi - window
    m = torch.where(keep, torch.tensor(0.0, dtype=torch.float64),
                    torch.tensor(torch.finfo(torch.float64).min, dtype=torch.float64))
    return m[None, None].expand(batch, 1, seq, seq).contiguous()


def attempts(module, x, tries):
    """The first call of `tries` (name, kwargs) that runs; (output, the name, what failed)."""
    failed = []
    for name, kwargs in tries:
        try:
            with torch.no_grad():
                out = module(x, **kwargs)
            return (out[0] if isinstance(out, tuple) else out), name, failed
        except (TypeError, AttributeError, IndexError, RuntimeError, ValueError) as e:
            failed.append(f"{name}: {type(e).__name__}: {str(e).splitlines()[0][:160]}")
    raise RuntimeError("no call form ran: " + " | ".join(failed))


def rotary(cls, config, x, position_ids, layer_type=None):
    """(cos, sin) from the family's rotary class, across its constructor and forward forms
    (layer_type: the per-layer-type rope_parameters of newer releases)."""
    makes = [lambda: cls(config=config), lambda: cls(config)]
    if layer_type is not None:
        makes.insert(0, lambda: cls(config=config, layer_type=layer_type))
    errors = []
    for make in makes:
        try:
            emb = make().double()
            break
        except (TypeError, KeyError, AttributeError) as e:
            errors.append(f"{type(e).__name__}: {e}")
    else:
        raise RuntimeError(f"{cls.__name__}: {errors}")
    with torch.no_grad():
        if layer_type is not None:
            try:
                return emb(x, position_ids, layer_type=layer_type)
            except TypeError:
                pass
        return emb(x, position_ids)


def expected_cos(head_dim, base, seq):
    """HF's default RoPE cos table [S, head_dim] (float32 angles), to check the rotary class."""
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
    freqs = torch.arange(seq).float()[:, None] * inv_freq[None]
    return torch.cat((freqs, freqs), -1).cos().double()


def decoder_family(module_name, attention, rotary_cls, config_cls, local_rope=False):
    """Llama-lineage attention: forward(hidden_states, position_embeddings, attention_mask, ...);
    older releases: forward(hidden_states, attention_mask, position_ids, ...)."""
    def run(folder, expected, x):
        import transformers
        mod = __import__(f"transformers.models.{module_name}.modeling_{module_name}",
                         fromlist=[attention])
        config = load_config(getattr(transformers, config_cls), folder)
        layer = 1
        types = getattr(config, "layer_types", None) or []
        sliding = (types[layer] == "sliding_attention") if len(types) > layer else \
            bool(getattr(config, "sliding_window", None))
        window = getattr(config, "sliding_window", None) if sliding else None
        attn = getattr(mod, attention)(config, layer_idx=layer)
        attn = load_into(attn, weights(folder), expected["prefix"])
        B, S, _ = x.shape
        position_ids = torch.arange(S)[None].expand(B, S)
        raw = json.loads((folder / "config.json").read_text())
        base = raw.get("rope_theta", 10000.0)
        rope_config, layer_type = config, None
        if local_rope and sliding:  # Gemma 3: sliding layers use rope_local_base_freq, unscaled
            base = raw["rope_local_base_freq"]
            params = getattr(config, "rope_parameters", None)
            if isinstance(params, dict) and "sliding_attention" in params:
                layer_type = "sliding_attention"  # newer: per-layer-type rope_parameters
            else:  # 4.5x: Gemma3TextModel's rotary_emb_local, a config copy
                rope_config = copy.deepcopy(config)
                rope_config.rope_theta = config.rope_local_base_freq
                rope_config.rope_scaling = {"rope_type": "default"}
        tries = []
        mask = additive_mask(B, S, True, window)
        cache_position = torch.arange(S)
        try:  # older releases have no rotary class taking a config: RoPE inside the attention
            cos_sin = rotary(getattr(mod, rotary_cls), rope_config, x, position_ids, layer_type)
        except (RuntimeError, AttributeError, TypeError) as e:
            cos_sin, rope_note = None, f"{rotary_cls}: {e}"
        if cos_sin is not None:
            hd = raw.get("head_dim") or raw["hidden_size"] // raw["num_attention_heads"]
            rot = int(hd * raw.get("partial_rotary_factor", 1.0))  # Phi-3: part of each head
            if tuple(cos_sin[0].shape[-2:]) != (S, rot):
                raise RuntimeError(f"{rotary_cls} gave cos of shape {list(cos_sin[0].shape)}, "
                                   f"expected [..., {S}, {rot}]")
            scaled = raw.get("rope_scaling") or raw.get("rope_parameters")
            rope_error = 0.0 if isinstance(scaled, dict) and scaled.get(
                "rope_type", scaled.get("type", "default")) != "default" else \
                float((cos_sin[0][0].double() - expected_cos(rot, base, S)).abs().max())
            if rope_error > 1e-6:  # a scaled table is checked by the output alone
                raise RuntimeError(f"{rotary_cls} gave cos off by {rope_error:.2e} from base "
                                   f"{base}'s table: the rotary class was not built for this layer")
            tries += [("position_embeddings", dict(position_embeddings=cos_sin,
                                                   attention_mask=mask)),
                      ("position_embeddings + cache_position",
                       dict(position_embeddings=cos_sin, attention_mask=mask,
                            cache_position=cache_position))]
        tries += [("position_ids (rotary inside)", dict(attention_mask=mask,
                                                        position_ids=position_ids)),
                 ("position_ids + cache_position", dict(attention_mask=mask,
                                                        position_ids=position_ids,
                                                        cache_position=cache_position))]
        out, form, failed = attempts(attn, x, tries)
        return out, form, failed if cos_sin is not None else failed + [rope_note]
    return run


def t5_family(folder, expected, x):
    import transformers
    from transformers.models.t5 import modeling_t5
    config = load_config(transformers.T5Config, folder)
    decoder = expected["prefix"].startswith("decoder.")
    config.is_decoder = decoder
    config.use_cache = False
    try:
        layer = modeling_t5.T5LayerSelfAttention(config, has_relative_attention_bias=True,
                                                 layer_idx=0)
    except TypeError:
        layer = modeling_t5.T5LayerSelfAttention(config, has_relative_attention_bias=True)
    state = weights(folder)
    stack = expected["prefix"].split(".")[0]
    table = state[f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight"]
    layer = load_into(layer, state, expected["prefix"],  # block 1, block 0's table (T5Stack)
                      {"SelfAttention.relative_attention_bias.weight": table})
    B, S, _ = x.shape
    mask = additive_mask(B, S, True, 0) if decoder else None
    cache_position = torch.arange(S)
    tries = [("attention_mask + cache_position",
              dict(attention_mask=mask, cache_position=cache_position)),
             ("attention_mask", dict(attention_mask=mask))]
    return attempts(layer, x, tries)


FAMILIES = {
    "qwen3": decoder_family("qwen3", "Qwen3Attention", "Qwen3RotaryEmbedding", "Qwen3Config"),
    "gemma3_text": decoder_family("gemma3", "Gemma3Attention", "Gemma3RotaryEmbedding",
                                  "Gemma3TextConfig", local_rope=True),
    "olmo2": decoder_family("olmo2", "Olmo2Attention", "Olmo2RotaryEmbedding", "Olmo2Config"),
    "mistral": decoder_family("mistral", "MistralAttention", "MistralRotaryEmbedding",
                              "MistralConfig"),
    "phi3": decoder_family("phi3", "Phi3Attention", "Phi3RotaryEmbedding", "Phi3Config"),
    "llama": decoder_family("llama", "LlamaAttention", "LlamaRotaryEmbedding", "LlamaConfig"),
    "qwen2": decoder_family("qwen2", "Qwen2Attention", "Qwen2RotaryEmbedding", "Qwen2Config"),
    "t5": t5_family,
}


def check(folder):
    expected = json.loads((folder / "expected.json").read_text())
    model_type = json.loads((folder / "config.json").read_text())["model_type"]
    x = torch.tensor(expected["input"], dtype=torch.float64)
    want = np.array(expected["out_f64"], dtype=np.float64)
    result = dict(case=folder.name, model_type=model_type, prefix=expected["prefix"],
                  reimplementation=expected["module"])
    run = FAMILIES.get(model_type)
    if run is None:
        return dict(result, status="skipped", why=f"no transformers class for {model_type}")
    try:
        out, form, failed = run(folder, expected, x)
    except Exception as e:  # any failure of one family is reported, the others still run
        return dict(result, status="error", error=f"{type(e).__name__}: {e}",
                    traceback=traceback.format_exc(limit=4))
    got = out.detach().double().numpy()
    if got.shape != want.shape:
        return dict(result, status="error", error=f"output shape {list(got.shape)}, expected "
                                                  f"{list(want.shape)}")
    diff = float(np.abs(got - want).max())
    return dict(result, status="ok" if diff <= TOLERANCE else "differs", call=form,
                forms_that_failed=failed, max_abs_diff=diff,
                max_abs_output=float(np.abs(want).max()))


def main(argv):
    try:
        import transformers
        version = transformers.__version__
    except ImportError as e:
        version = f"not importable: {e}"
    folders = sorted(p for p in FOLDERS.iterdir() if (p / "expected.json").is_file())
    if argv:
        folders = [f for f in folders if f.name in argv]
    results = [check(f) for f in folders] if not version.startswith("not") else []
    summary = dict(transformers=version, torch=torch.__version__, tolerance=TOLERANCE,
                   results=results)
    out_dir = pathlib.Path(os.environ.get("OUT", "."))
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "hf_crosscheck.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"transformers {version}, torch {torch.__version__}")
    for r in results:
        detail = (f"max |transformers - re-implementation| {r['max_abs_diff']:.3e} "
                  f"(outputs up to {r['max_abs_output']:.3g}; call: {r['call']})"
                  if "max_abs_diff" in r else r.get("error", r.get("why", "")))
        print(f"{r['status']:8s} {r['case']:14s} {detail}")
    print(f"wrote {out_dir / 'hf_crosscheck.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

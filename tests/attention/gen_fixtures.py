# SPDX-License-Identifier: Apache-2.0
"""Generate C++ reference fixtures for emha's multi-head attention from torch.nn.MultiheadAttention.

For every configuration in CASES this script builds a seeded torch.nn.MultiheadAttention (float32,
eval mode, dropout 0, default xavier init, biases drawn from uniform(-0.5, 0.5)), draws random
inputs and masks, runs forward and writes

    tests/attention/fixtures/<name>.hpp   one `struct emha::fixtures::<name>` per configuration
    tests/attention/fixtures/all.hpp      includes them all and defines
                                          `emha::fixtures::all`   = std::tuple<every case>
                                          `emha::fixtures::small` = std::tuple<cases with fewer
                                          than SMALL_LIMIT array elements> (for MCU firmware)

Run from the repository root (deterministic; overwrites only tests/attention/fixtures/):

    /usr/bin/python3 tests/attention/gen_fixtures.py

Struct format: every struct has the same members, so one templated test reads any fixture.
  - sizes and flags as `static constexpr` scalars: d_model, heads, kdim, vdim, seq_q, seq_kv,
    batch, bias, batch_first, causal, self_attention, attn_mask_kind (0 none, 1 bool, 2 float),
    attn_mask_per_head, need_weights, average_attn_weights;
  - arrays as `static constexpr float x[] = {...};` (bool for masks), an absent array as
    `static constexpr const float* x = nullptr;`; in self-attention cases key and value are
    references to query (`static constexpr const float (&key)[N] = query;`). Weights are in torch layout; query/key/value/out
    are [B,S,D] if batch_first else [S,B,D]; attn_weights use torch's output layout
    ([B,Sq,Skv] averaged, [B,H,Sq,Skv] per head), independent of batch_first.
  - floats are exact hex-float literals; -inf (float masks only) is
    `-std::numeric_limits<float>::infinity()`.
  - `out_f64` (double): the truth, the same module, inputs and masks run in float64 (torch's
    float32 `out` is one float32 implementation's error against it, emha's another).
Causal cases: torch got the bool mask triu(ones(Sq, Skv), 1) (merged into the float mask as -inf
when there is one); the header stores attn_mask_kind/attn_mask_* WITHOUT the causal part, since
emha applies its own causal mask.

The reference is computed on torch's Python path (F.multi_head_attention_forward): autograd stays
enabled so torch never takes its fused "fast path", whose kernels differ between builds.
"""
import copy
import pathlib
import zlib
from dataclasses import dataclass
from typing import Optional, Tuple, Union

import numpy as np
import torch

OUT_DIR = pathlib.Path(__file__).resolve().parent / "fixtures"
SMALL_LIMIT = 20000  # total array elements (weights + inputs + masks + outputs) of a "small" case
WIDTH = 100
NEG_INF = "-std::numeric_limits<float>::infinity()"
BOOL_ARRAYS = {"key_padding_mask", "attn_mask_bool"}
DOUBLE_ARRAYS = {"out_f64"}


@dataclass(frozen=True)
class Case:
    name: str
    d_model: int
    heads: int
    seq_q: int
    seq_kv: int
    batch: int = 1
    kdim: Optional[int] = None  # None: d_model
    vdim: Optional[int] = None
    bias: bool = True
    batch_first: bool = True
    self_attention: bool = True
    causal: bool = False
    mask: str = "none"  # "none" | "bool" | "float"
    mask_per_head: bool = False
    padding: Union[None, str, Tuple[int, ...]] = None  # "scattered" or valid length per batch
    need_weights: bool = True
    average: bool = True

    @property
    def k_dim(self):
        return self.kdim or self.d_model

    @property
    def v_dim(self):
        return self.vdim or self.d_model


CASES = [
    Case("basic", 16, 2, 5, 5),
    Case("d200_h5", 200, 5, 6, 6),
    Case("dk15", 60, 4, 9, 9, average=False),
    Case("dk4", 16, 4, 7, 7),
    Case("cross", 24, 3, 3, 11, self_attention=False),
    Case("kvdim", 32, 4, 5, 8, kdim=24, vdim=40, self_attention=False),
    Case("nobias", 32, 4, 6, 6, bias=False),
    Case("causal_self", 32, 4, 9, 9, causal=True),  # not "causal": it would clash with a member
    Case("causal_cross", 16, 2, 10, 10, batch=2, self_attention=False, causal=True,
         padding=(10, 7)),
    Case("key_padding", 32, 4, 6, 9, batch=2, self_attention=False, padding=(9, 5)),
    Case("key_padding_scattered", 32, 4, 6, 9, batch=2, self_attention=False,
         padding="scattered"),
    Case("bool_mask", 32, 4, 7, 7, mask="bool"),
    Case("float_mask_per_head", 32, 4, 5, 6, batch=2, self_attention=False, mask="float",
         mask_per_head=True),
    Case("seq_first_b3", 32, 4, 4, 6, batch=3, batch_first=False, self_attention=False),
    Case("batch_first_b2_heads", 24, 3, 5, 7, batch=2, self_attention=False, average=False),
    Case("combined", 32, 4, 8, 8, batch=2, causal=True, mask="float", padding=(8, 5)),
    Case("no_weights", 16, 2, 5, 5, need_weights=False),
]


MEMBERS = {"name", "d_model", "heads", "kdim", "vdim", "seq_q", "seq_kv", "batch", "bias",
           "batch_first", "causal", "self_attention", "attn_mask_kind", "attn_mask_per_head",
           "need_weights", "average_attn_weights"}
assert not MEMBERS & {c.name for c in CASES}, "a struct cannot have a member named like itself"


def build_module(case):
    """Seeded MHA with default (xavier) weights and non-zero biases."""
    mha = torch.nn.MultiheadAttention(case.d_model, case.heads, dropout=0.0, bias=case.bias,
                                      kdim=case.kdim, vdim=case.vdim,
                                      batch_first=case.batch_first).eval()
    with torch.no_grad():
        if case.bias:
            mha.in_proj_bias.uniform_(-0.5, 0.5)
            mha.out_proj.bias.uniform_(-0.5, 0.5)
    return mha


def seq_tensor(case, seq, dim):
    shape = (case.batch, seq, dim) if case.batch_first else (seq, case.batch, dim)
    return torch.randn(shape)


def make_inputs(case):
    """query, key, value; for self-attention all three are the same tensor object."""
    query = seq_tensor(case, case.seq_q, case.d_model)
    if case.self_attention:
        assert case.seq_q == case.seq_kv and case.k_dim == case.v_dim == case.d_model
        return query, query, query
    return query, seq_tensor(case, case.seq_kv, case.k_dim), seq_tensor(case, case.seq_kv,
                                                                       case.v_dim)


def make_padding(case):
    """key_padding_mask [batch, seq_kv], True = ignore key."""
    if case.padding is None:
        return None
    if case.padding == "scattered":
        return torch.rand(case.batch, case.seq_kv) < 0.35
    lengths = torch.tensor(case.padding)
    return torch.arange(case.seq_kv)[None, :] >= lengths[:, None]


def causal_mask(case):
    return torch.triu(torch.ones(case.seq_q, case.seq_kv), diagonal=1).bool()


def make_attn_mask(case):
    """(mask stored for emha, mask given to torch); the torch one includes the causal part."""
    shape = ((case.batch * case.heads,) if case.mask_per_head else ()) + (case.seq_q, case.seq_kv)
    if case.mask == "bool":
        assert not case.causal
        mask = torch.rand(shape) < 0.3
        return mask, mask
    if case.mask == "float":
        mask = (torch.randn(shape) * 0.5).masked_fill(torch.rand(shape) < 0.1, float("-inf"))
        return mask, mask.masked_fill(causal_mask(case), float("-inf")) if case.causal else mask
    return None, causal_mask(case) if case.causal else None


def has_dead_row(case, padding, torch_mask):
    """True if some (batch, head, query) row has every key masked (torch would give NaN)."""
    dead = torch.zeros(case.batch, case.heads, case.seq_q, case.seq_kv, dtype=torch.bool)
    if padding is not None:
        dead |= padding[:, None, None, :]
    if torch_mask is not None:
        blocked = torch_mask if torch_mask.dtype == torch.bool else torch_mask == float("-inf")
        dead |= blocked.reshape(-1, case.heads, case.seq_q, case.seq_kv) if blocked.dim() == 3 \
            else blocked
    return bool(dead.all(dim=-1).any())


def draw_masks(case):
    """Draw padding and attention masks, re-drawing until no query row is fully masked."""
    for _ in range(100):
        padding = make_padding(case)
        emha_mask, torch_mask = make_attn_mask(case)
        if not has_dead_row(case, padding, torch_mask):
            return padding, emha_mask, torch_mask
    raise RuntimeError(f"{case.name}: could not draw masks without a fully masked row")


def run_torch(mha, case, query, key, value, padding, torch_mask):
    """Forward on torch's Python path (autograd on => no fused fast path); returns numpy arrays."""
    with torch.enable_grad():
        out, weights = mha(query, key, value, key_padding_mask=padding,
                           need_weights=case.need_weights, attn_mask=torch_mask,
                           average_attn_weights=case.average)
    out = out.detach().numpy()
    weights = weights.detach().numpy() if case.need_weights else None
    for arr in (out, weights):
        assert arr is None or np.isfinite(arr).all(), f"{case.name}: non-finite output"
    return out, weights


def run_float64(mha, case, query, key, value, padding, torch_mask):
    """The float64 truth: the same weights, inputs and masks, every operation in double."""
    mha64 = copy.deepcopy(mha).double()
    q, k, v = (t.double() for t in (query, key, value))
    if case.self_attention:
        k = v = q
    mask = torch_mask.double() if torch_mask is not None and torch_mask.is_floating_point() else torch_mask
    with torch.enable_grad():
        out, _ = mha64(q, k, v, key_padding_mask=padding, need_weights=False, attn_mask=mask)
    return out.detach().numpy()


def generate(case, seed=None):
    """All arrays of one fixture, in header order (None = absent). seed: another draw of the same
    case (tests/attention/accuracy_orders.py); the fixtures use the case name's CRC."""
    torch.manual_seed(zlib.crc32(case.name.encode()) if seed is None else seed)
    mha = build_module(case)
    query, key, value = make_inputs(case)
    padding, emha_mask, torch_mask = draw_masks(case)
    out, weights = run_torch(mha, case, query, key, value, padding, torch_mask)
    out_f64 = run_float64(mha, case, query, key, value, padding, torch_mask)
    param = lambda t: None if t is None else t.detach().numpy()  # noqa: E731
    return {
        "in_proj_weight": param(mha.in_proj_weight),
        "q_proj_weight": param(mha.q_proj_weight),
        "k_proj_weight": param(mha.k_proj_weight),
        "v_proj_weight": param(mha.v_proj_weight),
        "in_proj_bias": param(mha.in_proj_bias),
        "out_proj_weight": param(mha.out_proj.weight),
        "out_proj_bias": param(mha.out_proj.bias),
        "query": query.numpy(), "key": key.numpy(), "value": value.numpy(),
        "key_padding_mask": None if padding is None else padding.numpy(),
        "attn_mask_bool": emha_mask.numpy() if case.mask == "bool" else None,
        "attn_mask_float": emha_mask.numpy() if case.mask == "float" else None,
        "out": out, "attn_weights": weights, "out_f64": out_f64,
    }


def double_literal(x):
    assert np.isfinite(x), x
    mantissa, exponent = float(x).hex().split("p")
    return mantissa.rstrip("0").rstrip(".") + "p" + exponent


def float_literal(x):
    x = float(np.float32(x))
    if x == float("-inf"):
        return NEG_INF
    assert np.isfinite(x), x
    mantissa, exponent = x.hex().split("p")
    return mantissa.rstrip("0").rstrip(".") + "p" + exponent + "f"


def wrap(tokens, indent):
    """Space-separated tokens packed into lines of at most WIDTH columns."""
    lines = [indent + tokens[0]]
    for token in tokens[1:]:
        if len(lines[-1]) + 1 + len(token) > WIDTH:
            lines.append(indent + token)
        else:
            lines[-1] += " " + token
    return lines


def array_member(name, arr, bool_arrays=BOOL_ARRAYS):
    """A fixture array as a static constexpr member (absent: a null pointer); bool_arrays names
    the bool ones, DOUBLE_ARRAYS the double ones, every other is float."""
    ctype = "bool" if name in bool_arrays else "double" if name in DOUBLE_ARRAYS else "float"
    if arr is None:
        return [f"  static constexpr const {ctype}* {name} = nullptr;"]
    fmt = {"bool": lambda v: "true" if v else "false", "double": double_literal,
           "float": float_literal}[ctype]
    return ([f"  static constexpr {ctype} {name}[] = {{  // {list(arr.shape)}"]
            + wrap([fmt(v) + "," for v in arr.reshape(-1)], "    ") + ["  };"])


def render_header(case, arrays):
    b = lambda v: "true" if v else "false"  # noqa: E731
    kind = {"none": 0, "bool": 1, "float": 2}[case.mask]
    lines = [
        "// Generated by tests/attention/gen_fixtures.py from torch.nn.MultiheadAttention "
        f"(torch {torch.__version__}). Do not edit.",
        "#pragma once", "#include <cstddef>", "#include <limits>",
        "namespace emha::fixtures {", f"struct {case.name} {{",
        f'  static constexpr const char* name = "{case.name}";',
        f"  static constexpr std::size_t d_model = {case.d_model}, heads = {case.heads}, "
        f"kdim = {case.k_dim}, vdim = {case.v_dim};",
        f"  static constexpr std::size_t seq_q = {case.seq_q}, seq_kv = {case.seq_kv}, "
        f"batch = {case.batch};",
        f"  static constexpr bool bias = {b(case.bias)};",
        f"  static constexpr bool batch_first = {b(case.batch_first)};  "
        "// query/key/value/out: [B,S,D] if true else [S,B,D]",
        f"  static constexpr bool causal = {b(case.causal)};  "
        "// apply emha's causal mask (torch: bool triu mask)",
        f"  static constexpr bool self_attention = {b(case.self_attention)};  "
        "// query, key and value are the same tensor",
        f"  static constexpr int attn_mask_kind = {kind};  // 0 none, 1 bool (true = masked), "
        "2 float additive",
        f"  static constexpr bool attn_mask_per_head = {b(case.mask_per_head)};  "
        "// true: [batch*heads,Sq,Skv]; false: [Sq,Skv]",
        f"  static constexpr bool need_weights = {b(case.need_weights)};",
        f"  static constexpr bool average_attn_weights = {b(case.average)};",
    ]
    if case.causal and case.mask == "float":
        lines += ["  // attn_mask_float excludes the causal part: torch got attn_mask_float with",
                  "  // -inf added where key > query; emha adds the causal mask itself."]
    for name, arr in arrays.items():
        if case.self_attention and name in ("key", "value"):  # the same tensor: no second copy
            lines.append(f"  static constexpr const float (&{name})[{arr.size}] = query;")
        else:
            lines += array_member(name, arr)
    lines += ["};", "}  // namespace emha::fixtures", ""]
    return "\n".join(lines)


def render_all(names, small, script="gen_fixtures.py", namespace="emha::fixtures"):
    """all.hpp: every fixture's header, and the tuples `all` and `small` in `namespace`."""
    tuple_of = lambda alias, ns: [f"using {alias} = std::tuple<"] + wrap(  # noqa: E731
        [n + "," for n in ns[:-1]] + [ns[-1] + ">;"], "    ")
    lines = [
        f"// Generated by tests/attention/{script}. Do not edit.",
        "#pragma once", "#include <tuple>",
        *[f'#include "{n}.hpp"' for n in names],
        f"namespace {namespace} {{",
        *tuple_of("all", names),
        f"// fewer than {SMALL_LIMIT} array elements (weights + inputs + masks + outputs)",
        *tuple_of("small", small),
        f"}}  // namespace {namespace}", "",
    ]
    return "\n".join(lines)


def main():
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    small = []
    for case in CASES:
        arrays = generate(case)
        count = sum(a.size for n, a in arrays.items() if a is not None and n != "out_f64")
        if count < SMALL_LIMIT:
            small.append(case.name)
        path = OUT_DIR / f"{case.name}.hpp"
        path.write_text(render_header(case, arrays))
        print(f"{path.name:28s} {count:7d} elements {path.stat().st_size:9d} bytes")
    (OUT_DIR / "all.hpp").write_text(render_all([c.name for c in CASES], small))


if __name__ == "__main__":
    main()

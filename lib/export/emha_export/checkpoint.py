# SPDX-License-Identifier: Apache-2.0
"""Reading the checkpoint: its tensors by name (Checkpoint), each checked as it is read."""
from collections.abc import Mapping

import torch

from .errors import fail, shape_str
from .hf import load_checkpoint
from .int8 import checkpoint_int8

HEADS_ATTRS = ("num_heads", "heads", "n_heads", "num_attention_heads")
KV_HEADS_ATTRS = ("num_key_value_heads", "kv_heads", "n_kv_heads")


class Checkpoint:
    """The checkpoint's tensors by name (float32, detached), the module if it was one, and which
    names the export has used (the rest under the prefix is an error: nothing is ignored)."""

    def __init__(self, path, allow_pickle=False, config_path=None):
        obj, self.config, self.config_path, self.file = load_checkpoint(path, allow_pickle,
                                                                       config_path)
        self.module = obj if isinstance(obj, torch.nn.Module) else None
        if self.module is not None:
            state = self.module.state_dict()
        elif isinstance(obj, dict) and isinstance(obj.get("state_dict"), dict):
            state = obj["state_dict"]
        elif isinstance(obj, (dict, Mapping)):
            state = obj
        else:
            fail(f"{path}: neither a state_dict nor a module (a {type(obj).__name__})")
        self.tensors = state if not isinstance(state, dict) else \
            {k: v for k, v in state.items() if isinstance(v, torch.Tensor)}
        self.used = set()
        self.view, self.int8_pass, self.int8_read = "values", False, set()

    def has(self, name):
        return name in self.tensors

    def under(self, prefix):
        return sorted(n for n in self.tensors if not prefix or n.startswith(prefix + "."))

    def found(self, prefix):
        names = self.under(prefix)
        shown = ", ".join(names[:24]) + (f", ... ({len(names)} in all)" if len(names) > 24 else "")
        return f"found under '{prefix}': {shown}" if names else f"nothing is under '{prefix}'"

    def get(self, name, prefix):
        """The tensor `name` as float32 (missing: an error listing what is under `prefix`). An
        int8 projection weight (int8.py) is its values as float32 in the "values"
        view, its row scales broadcast over the columns in the "scales" view, where every float
        tensor is NaN; int8 is refused outside the projections (int8_pass False)."""
        if name not in self.tensors:
            fail(f"{name} is missing; {self.found(prefix)}")
        self.used.add(name)
        raw = self.tensors[name]
        if raw.dtype == torch.int8:
            if not self.int8_pass:
                fail(f"{name} is int8 {shape_str(raw.shape)}: only the projections' weights may "
                     "be int8 (biases, norms and tables stay float)")
            q, scale = checkpoint_int8(self.tensors, name)
            self.used.add(name + "_scale")
            self.int8_read.add(name)
            return q if self.view == "values" else scale[:, None].expand_as(q).contiguous()
        t = raw.detach().to(torch.float32).contiguous()
        bad = ~torch.isfinite(t)
        if bool(bad.any()):
            first = [int(i) for i in bad.nonzero()[0]]
            fail(f"{name} has shape {shape_str(t.shape)} and {int(bad.sum())} non-finite values "
                 f"(the first at {first}, {float(self.tensors[name].reshape(-1)[bad.reshape(-1)][0])})")
        return t if self.view == "values" else torch.full_like(t, float("nan"))

    def optional(self, name, prefix):
        return self.get(name, prefix) if name in self.tensors else None

    def submodule(self, path):
        if self.module is None:
            return None
        try:
            return self.module.get_submodule(path)
        except AttributeError:
            return None


def int_attr(module, names):
    for n in names:
        v = getattr(module, n, None)
        if isinstance(v, int) and not isinstance(v, bool):
            return n, v
    return None, None

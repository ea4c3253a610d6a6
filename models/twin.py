"""What a shared model's attention modules return, read by hooks on a private twin that shares its weights.

A hook on a shared, cached model would be seen by every other caller; a full copy would double its memory. The twin
is a deep copy of the modules' structure whose parameters and buffers are the model's own tensors (deepcopy's memo
seeded with them), so it costs a few milliseconds and no weights, and hooks on it touch nothing the model's other
callers run. It only reads: one forward pass without gradients, the twin dropped afterwards. It does not decide
what a difference means (models.residual does).

    outs = attention_outputs(lm, ids, ["model.layers.0.self_attn", "model.layers.1.self_attn"])
    outs[0].shape    # (C,) layer 0's attention output at the last position
"""
from __future__ import annotations

import copy

import torch


def twin(model: torch.nn.Module) -> torch.nn.Module:
    """A copy of the model's modules holding the model's own parameters and buffers (no weight is copied)."""
    memo = {id(t): t for t in (*model.parameters(), *model.buffers())}
    return copy.deepcopy(model, memo)


@torch.no_grad()
def attention_outputs(model: torch.nn.Module, ids: torch.Tensor, names: list[str]) -> list[torch.Tensor]:
    """Each named module's output (its first, where it returns a tuple) at the last position of ids (1, T), in the
    order of names: [(C,), ...], from one forward pass of a twin."""
    other = twin(model)
    seen: dict[str, torch.Tensor] = {}
    for name in names:
        def keep(module, args, out, name=name):
            seen[name] = (out[0] if isinstance(out, tuple) else out)[0, -1].detach()  # (C,)
        other.get_submodule(name).register_forward_hook(keep)
    other(input_ids=ids)
    return [seen[name] for name in names]

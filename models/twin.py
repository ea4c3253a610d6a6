"""What a shared model's attention modules return, read by hooks on a private twin that shares its weights.

A hook on a shared, cached model would be seen by every other caller; a full copy would double its memory. The twin
is a deep copy of the modules' structure whose parameters and buffers are the model's own tensors (deepcopy's memo
seeded with them), so it costs a few milliseconds and no weights, and hooks on it touch nothing the model's other
callers run. The twin carries none of the model's hooks (a gates context's edits do not reach it), and is copied
under the lock models.gates holds while installing them, so no install changes a module mid-copy. It only reads: one
forward pass without gradients, the twin dropped afterwards. It does not decide what a difference means
(models.residual does).

    outs = attention_outputs(lm, ids, ["model.layers.0.self_attn", "model.layers.1.self_attn"])
    outs[0].shape    # (C,) layer 0's attention output at the last position
    projection_inputs(lm, ids, ["model.layers.0.self_attn.o_proj"])[0]   # (H * d_v,) what the projection reads
"""
from __future__ import annotations

import copy

import torch

from models import gates


def twin(model: torch.nn.Module) -> torch.nn.Module:
    """A copy of the model's modules holding the model's own parameters and buffers (no weight is copied) and none of
    its forward hooks."""
    memo = {id(t): t for t in (*model.parameters(), *model.buffers())}
    with gates.installs_paused():
        other = copy.deepcopy(model, memo)
    for m in other.modules():  # the copy's own dicts: the model keeps its hooks
        for table in (m._forward_pre_hooks, m._forward_hooks, m._forward_pre_hooks_with_kwargs,
                      m._forward_hooks_with_kwargs, m._forward_hooks_always_called):
            table.clear()
    return other


@torch.no_grad()
def attention_outputs(model: torch.nn.Module, ids: torch.Tensor, names: list[str],
                      less_residual: bool = False) -> list[torch.Tensor]:
    """Each named module's output (its first, where it returns a tuple) at the last position of ids (1, T), in the
    order of names: [(C,), ...], from one forward pass of a twin; less_residual: less its second argument there
    (BLOOM's attention takes the residual and adds it itself). A module called more than once gives its last call's."""
    def take(args, out):
        o = (out[0] if isinstance(out, tuple) else out)[0, -1]         # (C,)
        return o - args[1][0, -1] if less_residual else o

    return _read(model, ids, names, take)


@torch.no_grad()
def projection_inputs(model: torch.nn.Module, ids: torch.Tensor, names: list[str]) -> list[torch.Tensor]:
    """What each named module (an output projection) reads at the last position of ids (1, T), in the order of names:
    [(width,), ...], from one forward pass of a twin (a module called more than once: its last call's). For an
    attention that gates its heads' outputs, this is each head's output after its gate, as the projection reads it.

        projection_inputs(lm, ids, ["model.layers.0.self_attn.o_proj"])[0].shape   # (H * d_v,)
    """
    return _read(model, ids, names, lambda args, out: args[0][0, -1])   # (width,) each


def _read(model: torch.nn.Module, ids: torch.Tensor, names: list[str], take) -> list[torch.Tensor]:
    """take(args, out) of each named module's last call in one forward pass of a twin on ids, in the order of names."""
    other = twin(model)
    seen: dict[str, torch.Tensor] = {}
    for name in names:
        def keep(module, args, out, name=name):
            seen[name] = take(args, out).detach()
        other.get_submodule(name).register_forward_hook(keep)
    other(input_ids=ids)
    return [seen[name] for name in names]

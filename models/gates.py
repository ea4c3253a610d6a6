"""Head gates on a BERT-style encoder or the tiny decoder: multiply each head's output by ξ_h.

A forward pre-hook on each layer's attention output projection (BertSelfOutput.dense, or the
tiny decoder's attn.c_proj) sees the
heads concatenated, (B, T, H*hs), just before they are mixed; it reshapes to (B, T, H, hs) and
scales head h by ξ[layer][h]. ξ = 0 removes a head exactly as slicing it out would; ξ with
requires_grad gives ∂L/∂ξ_h for importance (Michel et al. 2019). The gates live in a context
variable set by `gated(...)`, so hooks left on a shared model change nothing for other callers
(or other Streamlit sessions, each of which runs in its own thread). Installing the idle hooks is the
one change made to the model, once, under a lock, so two sessions arriving together cannot hook it twice.

Works on the BERT layout (encoder.layer[i].attention.self / .output.dense: BERT, RoBERTa, ELECTRA,
MiniLM) and on the decoders written here (blocks[i].attn of models.attention, with n_head and
head_size: the tiny decoder, the KV-cache decoder). Does not gate other layouts; those raise ValueError.
"""
from __future__ import annotations

import threading
from collections.abc import Sequence
from contextlib import contextmanager
from contextvars import ContextVar

import torch
from torch import nn

_INSTALL = threading.Lock()
_GATES: ContextVar[Sequence[torch.Tensor] | None] = ContextVar("head_gates", default=None)


def layers(model: nn.Module) -> list[nn.Module]:
    """The BertAttention blocks of `model` (or its base model), one per layer; ValueError if none."""
    base = getattr(model, "base_model", model)
    blocks = getattr(getattr(base, "encoder", None), "layer", None)
    if blocks is None or not all(hasattr(b, "attention") and hasattr(b.attention, "self") for b in blocks):
        raise ValueError("Head gates and pruning need a BERT-style encoder (encoder.layer[i].attention); "
                         "pick 'bert', 'tiny' or a BERT/RoBERTa/ELECTRA folder.")
    return [b.attention for b in blocks]


def tiny_attentions(model: nn.Module) -> list[nn.Module] | None:
    """The CausalSelfAttention of each block of a models.tiny TinyDecoder, or None for other models."""
    blocks = getattr(model, "blocks", None)
    if blocks is None or not all(hasattr(getattr(b, "attn", None), "c_proj") for b in blocks):
        return None
    return [b.attn for b in blocks]


def projections(model: nn.Module) -> list[nn.Linear]:
    """Each layer's attention output projection: its input holds the heads side by side, (B, T, H*hs)."""
    tiny = tiny_attentions(model)
    return [a.c_proj for a in tiny] if tiny is not None else [att.output.dense for att in layers(model)]


def head_counts(model: nn.Module) -> list[int]:
    """Heads per layer as the model is now (after pruning they may differ), e.g. [12, 12, 7, ...]."""
    tiny = tiny_attentions(model)
    if tiny is not None:
        return [a.n_head for a in tiny]
    return [att.self.query.out_features // att.self.attention_head_size for att in layers(model)]


def _hook(index: int):
    def scale_heads(module: nn.Module, args: tuple) -> tuple | None:
        gates = _GATES.get()
        if gates is None:
            return None
        x = args[0]                                             # (B, T, H*hs)
        g = gates[index].to(x.device, x.dtype)                  # (H,)
        heads = x.view(*x.shape[:-1], g.shape[0], -1)           # (B, T, H, hs)
        return ((heads * g[:, None]).flatten(-2),) + args[1:]   # (B, T, H*hs)
    return scale_heads


def install(model: nn.Module) -> nn.Module:
    """Put the (idle) gate hooks on every layer once; returns the model."""
    with _INSTALL:
        for i, proj in enumerate(projections(model)):  # marked on the module: a head model and its base share them
            if not getattr(proj, "_head_gate_hooked", False):
                proj.register_forward_pre_hook(_hook(i))
                proj._head_gate_hooked = True
    return model


@contextmanager
def gated(model: nn.Module, gates: Sequence[torch.Tensor] | torch.Tensor):
    """Within the block, head h of layer l is scaled by gates[l][h] (a (L, H) tensor or one per layer)."""
    install(model)
    counts = head_counts(model)
    if len(gates) != len(counts) or any(len(g) != n for g, n in zip(gates, counts)):
        raise ValueError(f"Gates must give one value per head: the model has {counts} heads per layer.")
    token = _GATES.set(gates)
    try:
        yield model
    finally:
        _GATES.reset(token)


def mask(counts: Sequence[int], off: dict[int, Sequence[int]] | None, dtype=torch.float32) -> list[torch.Tensor]:
    """0/1 gates with the heads in `off` ({layer: [heads]}) set to 0. ([2, 2], {1: [0]}) -> [[1, 1], [0, 1]]"""
    gates = [torch.ones(n, dtype=dtype) for n in counts]
    for layer, heads in (off or {}).items():
        gates[int(layer)][list(heads)] = 0
    return gates

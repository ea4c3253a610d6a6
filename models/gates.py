"""Per-call interventions on heads and on the residual stream, for every family models.sites knows.

Head h's output is its slice of the input to its layer's attention output projection (models.sites: BERT's
output.dense, GPT-2's c_proj, Llama's o_proj, T5's o, ...), (B, T, H*hs) just before the heads are mixed. A forward
pre-hook there reshapes it to (B, T, H, hs) and hands it to the edits in force: gates (multiply head h by ξ_h;
ξ = 0 removes a head exactly as slicing it out would; ξ with requires_grad gives ∂L/∂ξ_h for importance, Michel et
al. 2019), patching (a head's output from another run, or any (T, hs) value: a mean over a corpus ablates it)
and recording (keep a copy). A forward pre-hook on each layer of the main stack does the same for the residual
stream (B, T, C) entering it (patching one position from another run).

The edits live in a context variable set by the context managers below, so the hooks left on a shared model
change nothing for other callers (or other Streamlit sessions, each of which runs in its own thread), and nested
blocks compose (inner edits run after outer ones). Installing the idle hooks is the one change made to the model,
once, under a lock, so two sessions arriving together cannot hook it twice. Site i is models.sites.head_sites'
i-th entry (an encoder-decoder's encoder, decoder and cross layers, one after another). It does not remove
weights (models.prune does) and does not change attention weights, only what heads write.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

import torch
from torch import nn

from limits.errors import UserError
from models.sites import head_sites, module_of, residual_blocks

_INSTALL = threading.Lock()
Edit = tuple[str, Callable[[int, torch.Tensor], torch.Tensor]]   # ("heads" | "resid", fn(site, x) -> x)
_EDITS: ContextVar[tuple[Edit, ...]] = ContextVar("head_edits", default=())


def layers(model: nn.Module) -> list[nn.Module]:
    """The BertAttention blocks of `model` (or its base model), one per layer (real pruning: models.prune)."""
    base = getattr(model, "base_model", model)
    blocks = getattr(getattr(base, "encoder", None), "layer", None)
    if blocks is None or not all(hasattr(b, "attention") and hasattr(b.attention, "self") for b in blocks):
        raise UserError("Pruning heads out of the weights needs a BERT-style encoder (encoder.layer[i].attention); "
                        "pick 'bert', 'tiny' or a BERT/RoBERTa/ELECTRA folder.")
    return [b.attention for b in blocks]


def tiny_attentions(model: nn.Module) -> list[nn.Module] | None:
    """The CausalSelfAttention of each block of a decoder written here (blocks[i].attn.c_proj), or None."""
    blocks = getattr(model, "blocks", None)
    if blocks is None or not all(hasattr(getattr(b, "attn", None), "c_proj") for b in blocks):
        return None
    return [b.attn for b in blocks]


def head_counts(model) -> list[int]:
    """Heads per attention layer as the model is now (after pruning they may differ), e.g. [12, 12, 7, ...]."""
    return [s.heads for s in head_sites(model)]


def _heads_hook(index: int, size: int):
    def edit_heads(module: nn.Module, args: tuple) -> tuple | None:
        edits = [fn for kind, fn in _EDITS.get() if kind == "heads"]
        if not edits:
            return None
        x = args[0]                                             # (B, T, H*hs)
        heads = x.reshape(*x.shape[:-1], -1, size)              # (B, T, H, hs)
        for fn in edits:
            heads = fn(index, heads)
        return (heads.flatten(-2),) + args[1:]                  # (B, T, H*hs)
    return edit_heads


def _resid_hook(index: int):
    def edit_resid(module: nn.Module, args: tuple, kwargs: dict) -> tuple | None:
        edits = [fn for kind, fn in _EDITS.get() if kind == "resid"]
        if not edits:
            return None
        x = args[0] if args else kwargs["hidden_states"]       # (B, T, C)
        for fn in edits:
            x = fn(index, x)
        if args:
            return (x,) + args[1:], kwargs
        return args, {**kwargs, "hidden_states": x}
    return edit_resid


def install(model) -> nn.Module:
    """Put the (idle) hooks on every head site and residual layer once; returns the torch module."""
    with _INSTALL:  # marked on the module: a task-head model and its base share them
        for i, site in enumerate(head_sites(model)):
            if not getattr(site.proj, "_head_gate_hooked", False):
                site.proj.register_forward_pre_hook(_heads_hook(i, site.head_size))
                site.proj._head_gate_hooked = True
        for i, block in enumerate(residual_blocks(model)):
            if not getattr(block, "_resid_hooked", False):
                block.register_forward_pre_hook(_resid_hook(i), with_kwargs=True)
                block._resid_hooked = True
    return module_of(model)


@contextmanager
def installs_paused():
    """Within the block no install() runs on any model (one that starts waits until the block ends), so a copy of a
    model's modules made here (models.twin) finds each one hooked or not, never half. It installs nothing itself."""
    with _INSTALL:
        yield


def editing() -> bool:
    """Whether edits are in force in this thread/context (inside edited() or a context manager built on it: gates,
    patching, recording), so a forward of a hooked model now computes something other than the model."""
    return bool(_EDITS.get())


@contextmanager
def edited(model, *edits: Edit):
    """Within the block, every forward of `model` in this thread/context applies `edits` (after any outer ones)."""
    install(model)
    token = _EDITS.set(_EDITS.get() + edits)
    try:
        yield model
    finally:
        _EDITS.reset(token)


def _check(model, per_site: Sequence | Mapping, what: str) -> list[int]:
    counts = head_counts(model)
    if isinstance(per_site, Mapping):
        bad = [k for k in per_site if not 0 <= int(k) < len(counts)]
        if bad:
            raise UserError(f"{what}: layer {bad[0]} does not exist; the model has {len(counts)} attention layers.")
    elif len(per_site) != len(counts) or any(len(g) != n for g, n in zip(per_site, counts)):
        raise UserError(f"{what} must give one value per head: the model has {counts} heads per layer.")
    return counts


@contextmanager
def gated(model, gates: Sequence[torch.Tensor] | torch.Tensor):
    """Within the block, head h of layer l is scaled by gates[l][h] (a (L, H) tensor or one per layer)."""
    _check(model, gates, "Gates")

    def scale(i: int, heads: torch.Tensor) -> torch.Tensor:
        g = gates[i].to(heads.device, heads.dtype)              # (H,)
        return heads * g[:, None]                               # (B, T, H, hs)
    with edited(model, ("heads", scale)):
        yield model


@contextmanager
def patched(model, sources: Mapping[int, Mapping[int, torch.Tensor]]):
    """Within the block, head h of layer l writes sources[l][h] instead of its own output: (T, hs) or (B, T, hs)."""
    _check(model, sources, "Patching")

    def patch(i: int, heads: torch.Tensor) -> torch.Tensor:
        if i not in sources or not sources[i]:
            return heads
        heads = heads.clone()                                   # (B, T, H, hs)
        for h, value in sources[i].items():
            heads[:, :, h] = value.to(heads.device, heads.dtype)
        return heads
    with edited(model, ("heads", patch)):
        yield model


@contextmanager
def recorded(model):
    """Within the block, what each forward computes is kept: yields {"heads": {site: (B, T, H, hs)}, "resid":
    {layer: (B, T, C)}}, the heads' outputs and the residual stream entering each layer of the main stack."""
    kept: dict = {"heads": {}, "resid": {}}

    def keep_heads(i: int, heads: torch.Tensor) -> torch.Tensor:
        kept["heads"][i] = heads.detach().clone()
        return heads

    def keep_resid(i: int, x: torch.Tensor) -> torch.Tensor:
        kept["resid"][i] = x.detach().clone()
        return x
    with edited(model, ("heads", keep_heads), ("resid", keep_resid)):
        yield kept


def mask(counts: Sequence[int], off: dict[int, Sequence[int]] | None, dtype=torch.float32) -> list[torch.Tensor]:
    """0/1 gates with the heads in `off` ({layer: [heads]}) set to 0. ([2, 2], {1: [0]}) -> [[1, 1], [0, 1]]"""
    gates = [torch.ones(n, dtype=dtype) for n in counts]
    for layer, heads in (off or {}).items():
        gates[int(layer)][list(heads)] = 0
    return gates

"""Which of a config's layers attend, read from its per-layer kinds: shipped beside every pruned export.

A hybrid (Jamba, Qwen3-Next, LFM2, ...) mixes layers that attend with layers that do not (mamba, linear attention,
convolutions); the app numbers its attending layers alone, L0, L1, ..., and a pruned export's plan does too. This
file imports nothing outside the standard library, because a copy travels in each exported folder (as
pruned_slicing.py does) so that the exported model finds the same layers without this project. models.layout
re-exports it; it does not decide what the app refuses (models.layout.refusal does).

    attending(<a Jamba of 8 layers, attention at 3 and 7>) -> [3, 7];  attending(<a Llama>) -> None
"""
from __future__ import annotations

from collections.abc import Iterator

# A per-layer kind names attention with T x T weights when it says "attention" (full, sliding, chunked, indexed) or
# "hybrid" (attention beside a state-space mixer in the same layer: Falcon-H1), never "linear_attention".
PER_LAYER = ("layers_block_type", "block_types", "layer_types")  # the most specific first: Jamba's "mamba"


def per_layer(cfg) -> Iterator[list]:
    """Each per-layer field the config has (PER_LAYER), as a list; a derived one that cannot be computed is skipped."""
    for field in PER_LAYER:
        try:
            types = getattr(cfg, field, None) or ()
        except Exception:  # noqa: BLE001 (a derived per-layer property some configs cannot compute: no answer there)
            continue
        yield list(types)


def attends(kind) -> bool:
    """Whether a per-layer kind keeps softmax attention weights. 'full_attention' -> True; 'mamba' -> False"""
    return isinstance(kind, str) and kind != "linear_attention" and ("attention" in kind or "hybrid" in kind)


def layer_kinds(cfg) -> list | None:
    """The first per-layer field with one kind per layer (['mamba', 'attention', ...] for a Jamba), or None."""
    count = getattr(cfg, "num_hidden_layers", None)
    return next((types for types in per_layer(cfg) if count is None or len(types) == count), None)


def attending(cfg) -> list[int] | None:
    """The numbers of a hybrid's layers that attend, in order ([3, 7] for a Jamba of 8 layers that attends in every
    fourth from layer 3), from layer_kinds; None when every layer attends or no field says (every layer is then
    taken to attend); [] when none does (Mamba)."""
    kinds = layer_kinds(cfg) or []
    kept = [layer for layer, kind in enumerate(kinds) if attends(kind)]
    return kept if len(kept) < len(kinds) else None

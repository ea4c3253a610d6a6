"""Real head pruning for BERT-style encoders, GPT-2, Llama-style decoders and the tiny decoder: slice Q/K/V rows
and output-projection columns.

transformers 5 has no prune_heads, so this is ours. `prune_heads(model, plan)` removes, in place,
the heads named in plan = {layer: [heads]} (indices of the model as it is) and updates each
layer's num_attention_heads / all_head_size; the result equals the model gated with those heads
at 0 (models.gates). A layer that loses every head keeps one head with zero value weights and
zero output columns (transformers cannot run zero heads), which contributes exactly nothing.

The tiny decoder (models.tiny) is pruned the same way in its fused c_attn (q, k, v row blocks) and c_proj.
The transformers layouts' slicing (BERT, GPT-2, Llama with GQA) lives in models.pruned_modeling, the file every
export ships so that it loads without this project; writing, registering and loading a pruned model is
models.pruned_hf's, which this module never imports. Does not fine-tune after pruning, and does not prune FFN
neurons or layers.
"""
from __future__ import annotations

import copy

import numpy as np
import torch
from torch import nn

from limits.errors import UserError
from models.gates import gated, head_counts, mask, tiny_attentions
from models.pruned_modeling import (
    attention_layers,
    head_positions,
    heads_at,
    kept,
    normalise,
    slice_heads,
    slice_linear,
)


def _prune_tiny(attentions: list[nn.Module], plan: dict) -> None:
    """Decoders of models.attention: c_attn rows are [q heads | k heads | v heads], c_proj columns the heads.
    Each query head has its own key/value head here; a model whose heads share them (GQA) is refused."""
    for layer, heads in normalise(plan).items():
        a = attentions[layer]
        if a.n_kv_head != a.n_head:
            raise UserError("Pruning removes a head with its own keys and values; this decoder shares key/value "
                            "heads between query heads (GQA/MQA), so its heads cannot be cut out one by one.")
        width = a.n_head * a.head_size
        index, n, empty = kept(heads, a.n_head, a.head_size, a.c_attn.weight.device)
        a.c_attn = slice_linear(a.c_attn, torch.cat([index, index + width, index + 2 * width]), 0)
        a.c_proj = slice_linear(a.c_proj, index, 1)
        if empty:  # as for BERT (models.pruned_modeling): zero value rows and output columns
            for p in (a.c_attn.weight, a.c_attn.bias):
                p.data[2 * a.head_size:].zero_()
            a.c_proj.weight.data.zero_()
        a.n_head = a.n_kv_head = n


def prune_heads(model: nn.Module, plan: dict) -> nn.Module:
    """Remove plan's heads in place from an unpruned model; returns the model."""
    tiny = tiny_attentions(model)
    if tiny is not None:
        _prune_tiny(tiny, plan)
        return model
    try:
        attention_layers(model)  # a layout models.pruned_modeling slices (it ships without this project's errors)
    except ValueError as err:
        raise UserError(str(err)) from err
    return slice_heads(model, plan)


def pruned_copy(model: nn.Module, plan: dict) -> nn.Module:
    """A pruned deep copy; the original (e.g. a model cached for the whole app) is left whole."""
    return prune_heads(copy.deepcopy(model), plan)


def forward_output(model: nn.Module, inputs: dict | torch.Tensor) -> torch.Tensor:
    """An encoder's last hidden states (B, T, D) or a causal LM's logits (B, T, V) for tokenizer output, the tiny
    decoder's logits (B, T, V) for ids."""
    if not isinstance(inputs, dict):
        return model(inputs)[0]
    out = model(**inputs)
    return out.logits if getattr(out, "last_hidden_state", None) is None else out.last_hidden_state


@torch.no_grad()
def gap_to_gated(full: nn.Module, pruned: nn.Module, plan: dict, inputs: dict | torch.Tensor) -> float:
    """Largest |pruned - gated| over the outputs: the check that slicing removed just those heads. An output both
    models give as NaN counts as equal (a padded row whose sliding window masks every key, as Granite-SWA's in
    float64, is NaN in the model itself); a NaN in one of them only stays NaN."""
    with gated(full, mask(head_counts(full), plan)):
        want = forward_output(full, inputs)
    got = forward_output(pruned, inputs)
    return float((got - want).abs().masked_fill(got.isnan() & want.isnan(), 0).max())


def compose(before: dict, plan: dict, n_heads: int) -> dict[int, list[int]]:
    """Heads of the original model gone after `before` (original indices) and then `plan` (indices of the
    model `before` left). ({0: [1]}, {0: [1]}, 4) -> {0: [1, 2]}"""
    out = {layer: set(v) for layer, v in normalise(before).items()}
    for layer, heads in normalise(plan).items():
        kept = [h for h in range(n_heads) if h not in out.get(layer, set())]
        out.setdefault(layer, set()).update(kept[h] for h in heads if h < len(kept))  # beyond: the silent head
    return {layer: sorted(v) for layer, v in sorted(out.items()) if v}


def original_heads(model: nn.Module) -> list[list[int]]:
    """Each attention layer's original head at each position as the model is now (-1: a silent head), the numbering
    the traces of an export models.pruned_hf wrote use (models.hf.common.unpruned): a Llama-style layer says which
    heads it holds (head_positions); other layouts hold the heads config.pruned_heads left, in order; an unpruned
    model, its positions. 4 heads, {"0": [1]} pruned -> [[0, 2, 3], [0, 1, 2, 3]]"""
    positions = head_positions(model)
    if positions is not None:
        return positions
    config = getattr(model, "config", None)
    gone = normalise(getattr(config, "pruned_heads", None) or {})
    n = getattr(config, "num_attention_heads", 0)
    return [heads_at(gone, layer, n)[:count] if layer in gone else list(range(count))
            for layer, count in enumerate(head_counts(model))]


def original_places(model: nn.Module) -> dict[tuple[int, int], tuple[int, int]]:
    """Original (layer, head) -> (layer, position now) of every head the model holds, silent ones left out.
    4 heads, {"0": [1]} pruned -> {(0, 0): (0, 0), (0, 2): (0, 1), (0, 3): (0, 2), (1, 0): (1, 0), ...}"""
    counts = head_counts(model)
    return {(layer, h): (layer, p) for layer, at in enumerate(original_heads(model)) for p, h in enumerate(at)
            if h >= 0 and p < counts[layer]}


def by_original(model: nn.Module, scores: np.ndarray, width: int = 0) -> np.ndarray:
    """Scores by position [L, heads now] -> by original head [L, max(width, original heads)], inf where the model
    holds no head (cut, silent, or past a layer's heads)."""
    place = original_places(model)
    out = np.full((len(scores), max(width, 1 + max((h for _, h in place), default=-1))), np.inf)  # (L, H original)
    for (layer, h), (_, p) in place.items():
        out[layer, h] = scores[layer, p]
    return out


def heads_in_original(model: nn.Module, plan: dict) -> list[tuple[int, int]]:
    """A plan by positions of the model as it is -> its heads by the original model's numbers, sorted.
    {0: [1]} on an export that lost L0 H1 -> [(0, 2)]"""
    at = {now: head for head, now in original_places(model).items()}
    return sorted(at[(layer, p)] for layer, ps in plan.items() for p in ps)

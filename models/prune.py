"""Real head pruning for BERT-style encoders and the tiny decoder: slice Q/K/V rows and
output-projection columns.

transformers 5 has no prune_heads, so this is ours. `prune_heads(model, plan)` removes, in place,
the heads named in plan = {layer: [heads]} (indices of the model as it is) and updates each
layer's num_attention_heads / all_head_size; the result equals the model gated with those heads
at 0 (models.gates). A layer that loses every head keeps one head with zero value weights and
zero output columns (transformers cannot run zero heads), which contributes exactly nothing.

`export` writes plan.json, the pruned weights as model.safetensors (the task head included, when the
model has one), config.json as model_type "pruned-<family>" with the plan (indices of the original
model) under "pruned_heads", and a README.md that says how to load it. A transformers config holds
one head count for all layers, so the same Auto class loads the folder once models.pruned_hf has
registered that type (`load_pruned` does both).
The tiny decoder (models.tiny) is pruned the same way in its fused c_attn (q, k, v row blocks)
and c_proj; its export is one .safetensors whose metadata carries the plan, which
models.tiny.read_weights applies before loading.
Does not fine-tune after pruning, and does not prune FFN neurons or layers.
"""
from __future__ import annotations

import copy
import io
import json
import os
import tempfile
import zipfile
from dataclasses import asdict

import torch
from torch import nn

from models.gates import gated, head_counts, layers, mask, tiny_attentions


def _slice(linear: nn.Linear, index: torch.Tensor, dim: int) -> nn.Linear:
    """A new Linear keeping rows (dim=0: output features) or columns (dim=1: input features) `index`."""
    w = linear.weight.detach().index_select(dim, index).clone()
    b = linear.bias.detach().clone() if dim == 1 else linear.bias.detach()[index].clone()
    out = nn.Linear(w.shape[1], w.shape[0], device=w.device, dtype=w.dtype)
    out.weight.data.copy_(w)
    out.bias.data.copy_(b)
    return out


def normalise(plan: dict) -> dict[int, list[int]]:
    """Plan with int layers, sorted unique heads, empty layers dropped. {'1': [3, 0, 3]} -> {1: [0, 3]}"""
    return {int(k): sorted({int(h) for h in v}) for k, v in plan.items() if len(v)}


def _kept(heads: list[int], n: int, hs: int, device) -> tuple[torch.Tensor, int, bool]:
    """Feature index of the heads kept, their count and whether none was (then head 0 stays, silenced)."""
    keep = [h for h in range(n) if h not in heads]
    index = torch.cat([torch.arange(h * hs, (h + 1) * hs) for h in keep or [0]]).to(device)
    return index, len(keep or [0]), not keep


def _prune_tiny(attentions: list[nn.Module], plan: dict) -> None:
    """Decoders of models.attention: c_attn rows are [q heads | k heads | v heads], c_proj columns the heads.
    Each query head has its own key/value head here; a model whose heads share them (GQA) is refused."""
    for layer, heads in normalise(plan).items():
        a = attentions[layer]
        if a.n_kv_head != a.n_head:
            raise ValueError("Pruning removes a head with its own keys and values; this decoder shares key/value "
                             "heads between query heads (GQA/MQA), so its heads cannot be cut out one by one.")
        width = a.n_head * a.head_size
        index, n, empty = _kept(heads, a.n_head, a.head_size, a.c_attn.weight.device)
        a.c_attn = _slice(a.c_attn, torch.cat([index, index + width, index + 2 * width]), 0)
        a.c_proj = _slice(a.c_proj, index, 1)
        if empty:  # as for BERT below: zero value rows and output columns
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
    blocks = layers(model)
    for layer, heads in normalise(plan).items():
        sa, out = blocks[layer].self, blocks[layer].output
        hs = sa.attention_head_size
        index, n, empty = _kept(heads, sa.num_attention_heads, hs, sa.query.weight.device)
        sa.query, sa.key, sa.value = (_slice(m, index, 0) for m in (sa.query, sa.key, sa.value))
        out.dense = _slice(out.dense, index, 1)
        if empty:  # a zero value and zero output columns: this head adds nothing, as all-gates-0 would
            for p in (sa.value.weight, sa.value.bias, out.dense.weight):
                p.data.zero_()
        sa.num_attention_heads, sa.all_head_size = n, n * hs
    return model


def pruned_copy(model: nn.Module, plan: dict) -> nn.Module:
    """A pruned deep copy; the original (e.g. a model cached for the whole app) is left whole."""
    return prune_heads(copy.deepcopy(model), plan)


def forward_output(model: nn.Module, inputs: dict | torch.Tensor) -> torch.Tensor:
    """An encoder's last hidden states (B, T, D) for tokenizer output, the tiny decoder's logits (B, T, V) for ids."""
    return model(**inputs).last_hidden_state if isinstance(inputs, dict) else model(inputs)[0]


@torch.no_grad()
def gap_to_gated(full: nn.Module, pruned: nn.Module, plan: dict, inputs: dict | torch.Tensor) -> float:
    """Largest |pruned - gated| over the outputs: the check that slicing removed just those heads."""
    with gated(full, mask(head_counts(full), plan)):
        want = forward_output(full, inputs)
    return float((forward_output(pruned, inputs) - want).abs().max())


def compose(before: dict, plan: dict, n_heads: int) -> dict[int, list[int]]:
    """Heads of the original model gone after `before` (original indices) and then `plan` (indices of the
    model `before` left). ({0: [1]}, {0: [1]}, 4) -> {0: [1, 2]}"""
    out = {layer: set(v) for layer, v in normalise(before).items()}
    for layer, heads in normalise(plan).items():
        kept = [h for h in range(n_heads) if h not in out.get(layer, set())]
        out.setdefault(layer, set()).update(kept[h] for h in heads if h < len(kept))  # beyond: the silent head
    return {layer: sorted(v) for layer, v in sorted(out.items()) if v}


README = """# A pruned model

{heads} attention heads were removed from this {arch} (per layer, in the original model's numbering:
{plan}). The layers now hold different numbers of heads, which a stock transformers config cannot
describe, so config.json names the model type "{kind}" and lists the removed heads under "pruned_heads".
Load it with the same class as the original, after registering that type (Attention Explorer's models/):

    import models.pruned_hf as pruned_hf; pruned_hf.register("{kind}")
    model = transformers.{auto}.from_pretrained("<this folder>")

Without the registration transformers refuses the folder (unknown model type); it never loads it wrongly.
"""


def export(model: nn.Module, plan: dict, folder: str, tokenizer=None) -> list[str]:
    """Write plan.json, config.json (model_type "pruned-…" + "pruned_heads"), model.safetensors and README.md
    of a model pruned by `plan` (indices of the model before this pruning; a model that was already pruned
    keeps its earlier cuts). The tiny decoder: plan.json and model.safetensors with config and plan in its
    metadata."""
    from safetensors.torch import save_file

    os.makedirs(folder, exist_ok=True)
    plan = normalise(plan)
    if tiny_attentions(model) is not None:
        as_json = {str(k): v for k, v in plan.items()}
        meta = {"config": json.dumps(asdict(model.cfg)), "pruned_heads": json.dumps(as_json)}
        state = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
        save_file(state, os.path.join(folder, "model.safetensors"), metadata=meta)
    else:
        from models.pruned_hf import as_pruned_config
        from models.task_head import HEADS

        original = model.config
        full = compose(getattr(original, "pruned_heads", None) or {}, plan, original.num_attention_heads)
        as_json = {str(k): v for k, v in full.items()}
        model.config = as_pruned_config(original, full)
        try:
            model.save_pretrained(folder, safe_serialization=True)
        finally:
            model.config = original
        arch = type(model).__name__.removeprefix("Pruned")
        auto = next((a for end, (_, a, _) in HEADS.items() if arch.endswith(end)), "AutoModel")
        with open(os.path.join(folder, "README.md"), "w", encoding="utf-8") as f:
            f.write(README.format(heads=sum(map(len, full.values())), arch=arch, plan=json.dumps(as_json),
                                  kind=f"pruned-{original.model_type.removeprefix('pruned-')}", auto=auto))
    if tokenizer is not None:
        tokenizer.save_pretrained(folder)
    with open(os.path.join(folder, "plan.json"), "w") as f:
        json.dump(as_json, f, indent=1)
    return sorted(os.listdir(folder))


def export_zip(model: nn.Module, plan: dict, tokenizer=None) -> bytes:
    """export() into a temporary folder, returned as the bytes of a .zip (stored, not compressed)."""
    buf = io.BytesIO()
    with tempfile.TemporaryDirectory() as folder:
        export(model, plan, folder, tokenizer)
        with zipfile.ZipFile(buf, "w") as z:
            for name in sorted(os.listdir(folder)):
                z.write(os.path.join(folder, name), name)
    return buf.getvalue()


def load_pruned(folder: str, device: str = "cpu", auto: str = "AutoModel") -> nn.Module:
    """An exported folder through transformers' own `auto` class (the base encoder by default), its pruned
    classes registered first; ValueError if the weights do not fill the rebuilt model."""
    import transformers

    from models.pruned_hf import register

    register(folder)
    model, info = getattr(transformers, auto).from_pretrained(
        folder, attn_implementation="eager", use_safetensors=True, local_files_only=True, output_loading_info=True)
    missing = [k for k in info.get("missing_keys", []) if "position_ids" not in k]
    if missing or info.get("mismatched_keys"):
        raise ValueError(f"The pruned weights in {folder} do not fit its config ({len(missing)} tensors missing): "
                         "export the model again.")
    return model.eval().to(device)

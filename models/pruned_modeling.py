"""The classes of a pruned encoder, and the slicing that makes it: shipped inside every pruned export.

This file imports torch and transformers only, because a copy of it travels in each exported folder as
`modeling_pruned.py`, with FAMILY set to the export's family ("bert", "roberta", ...). config.json's
`auto_map` names its classes, so the folder loads wherever transformers is, without this project:

    AutoModelForSequenceClassification.from_pretrained("PRUNED/", trust_remote_code=True)
    pipeline("text-classification", model="PRUNED/", trust_remote_code=True)

transformers 5 keeps one head count for all layers and has no prune_heads, so a pruned class builds the
unpruned model from the config and slices the heads named in config.pruned_heads ({layer: [heads]}, in the
original numbering) out of Q, K, V and the output projection before the weights load. The weights are saved
as the variant "pruned" (model.pruned.safetensors): a stock class looks for model.safetensors and refuses the
folder, where loading the pruned tensors into an unpruned model would silently re-initialise the attention.
Works on the BERT layout (encoder.layer[i].attention.self / .output.dense: BERT, RoBERTa, ELECTRA, MiniLM);
does not fine-tune, and does not prune decoders.
"""
from __future__ import annotations

import torch
import transformers
from torch import nn
from transformers.models.auto import configuration_auto, modeling_auto

FAMILY = ""        # the copy in an exported folder names its family here; this project's copy stays empty
VARIANT = "pruned"  # the weights file: model.pruned.safetensors
AUTOS = {  # Auto class -> transformers' mapping from model_type to that head's class name
    "AutoModel": "MODEL_MAPPING_NAMES",
    "AutoModelForSequenceClassification": "MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES",
    "AutoModelForTokenClassification": "MODEL_FOR_TOKEN_CLASSIFICATION_MAPPING_NAMES",
    "AutoModelForMaskedLM": "MODEL_FOR_MASKED_LM_MAPPING_NAMES",
    "AutoModelForCausalLM": "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES",
    "AutoModelForQuestionAnswering": "MODEL_FOR_QUESTION_ANSWERING_MAPPING_NAMES",
}


def normalise(plan: dict) -> dict[int, list[int]]:
    """Plan with int layers, sorted unique heads, empty layers dropped. {'1': [3, 0, 3]} -> {1: [0, 3]}"""
    return {int(k): sorted({int(h) for h in v}) for k, v in plan.items() if len(v)}


def slice_linear(linear: nn.Linear, index: torch.Tensor, dim: int) -> nn.Linear:
    """A new Linear keeping rows (dim=0: output features) or columns (dim=1: input features) `index`."""
    w = linear.weight.detach().index_select(dim, index).clone()
    b = linear.bias.detach().clone() if dim == 1 else linear.bias.detach()[index].clone()
    out = nn.Linear(w.shape[1], w.shape[0], device=w.device, dtype=w.dtype)
    out.weight.data.copy_(w)
    out.bias.data.copy_(b)
    return out


def kept(heads: list[int], n: int, hs: int, device) -> tuple[torch.Tensor, int, bool]:
    """Feature index of the heads kept, their count and whether none was (then head 0 stays, silenced)."""
    keep = [h for h in range(n) if h not in heads]
    index = torch.cat([torch.arange(h * hs, (h + 1) * hs) for h in keep or [0]]).to(device)
    return index, len(keep or [0]), not keep


def slice_heads(model: nn.Module, plan: dict) -> nn.Module:
    """Remove plan's heads in place from an unpruned BERT-layout model; returns the model. A layer that loses
    every head keeps one with zero value weights and zero output columns (transformers cannot run zero heads),
    which contributes exactly nothing."""
    blocks = getattr(model, "base_model", model).encoder.layer
    for layer, heads in normalise(plan).items():
        sa, out = blocks[layer].attention.self, blocks[layer].attention.output
        hs = sa.attention_head_size
        index, n, empty = kept(heads, sa.num_attention_heads, hs, sa.query.weight.device)
        sa.query, sa.key, sa.value = (slice_linear(m, index, 0) for m in (sa.query, sa.key, sa.value))
        out.dense = slice_linear(out.dense, index, 1)
        if empty:  # a zero value and zero output columns: this head adds nothing, as all-gates-0 would
            for p in (sa.value.weight, sa.value.bias, out.dense.weight):
                p.data.zero_()
        sa.num_attention_heads, sa.all_head_size = n, n * hs
    return model


def _pruned(base: type, config_class: type) -> type:
    """A subclass of transformers' `base` that slices config.pruned_heads out as it is built and reads the
    "pruned" weights variant."""
    def __init__(self, config, *args, **kwargs):
        base.__init__(self, config, *args, **kwargs)
        slice_heads(self, getattr(config, "pruned_heads", None) or {})

    @classmethod
    def from_pretrained(cls, *args, **kwargs):
        kwargs.setdefault("variant", VARIANT)
        return super(klass, cls).from_pretrained(*args, **kwargs)

    klass = type(f"Pruned{base.__name__}", (base,), {"config_class": config_class, "__init__": __init__,
                                                     "from_pretrained": from_pretrained, "__module__": __name__})
    return klass


def classes(family: str) -> dict[str, type]:
    """{"AutoConfig": PrunedBertConfig, "AutoModel": PrunedBertModel, ...} for a family ('bert'): model_type
    'pruned-<family>', and a pruned class for each head transformers has for that family."""
    if family not in configuration_auto.CONFIG_MAPPING_NAMES:
        raise ValueError(f"Unknown model family {family!r}: a pruned export names its family in config.json.")
    base_config = configuration_auto.CONFIG_MAPPING[family]
    config = type(f"Pruned{base_config.__name__}", (base_config,),
                  {"model_type": f"pruned-{family}", "__module__": __name__})
    out = {"AutoConfig": config}
    for auto, mapping in AUTOS.items():
        name = getattr(modeling_auto, mapping).get(family)
        if name is not None and hasattr(transformers, name):
            out[auto] = _pruned(getattr(transformers, name), config)
    return out


if FAMILY:  # the copy inside an exported folder: the names config.json's auto_map points at
    globals().update({cls.__name__: cls for cls in classes(FAMILY).values()})

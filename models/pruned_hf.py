"""Pruned BERT-layout models that `from_pretrained` rebuilds with their own head count per layer.

transformers 5 keeps one head count for all layers and has no prune_heads. An export (models.prune.export)
therefore writes config.json with model_type "pruned-<family>" (e.g. "pruned-bert") and "pruned_heads"
({layer: [heads]}, indices of the unpruned model). `register(family or folder)` registers a config class of
that type and, for each task head of the family, a subclass that builds the unpruned model and slices it
(models.prune.prune_heads) before the weights load, so that the same Auto class loads the folder:

    import models.pruned_hf as pruned_hf; pruned_hf.register("PRUNED/")
    AutoModelForSequenceClassification.from_pretrained("PRUNED/")   # PrunedBertForSequenceClassification

Without register(), transformers refuses the folder (unknown model type "pruned-bert"): it never loads
it wrongly. Does not: load remote code, or prune layouts other than BERT's.
"""
from __future__ import annotations

import json
import os
import threading

_LOCK = threading.Lock()
_DONE: set[str] = set()
AUTOS = {  # Auto class -> name of transformers' mapping from model_type to that head's class
    "AutoModel": "MODEL_MAPPING_NAMES",
    "AutoModelForSequenceClassification": "MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES",
    "AutoModelForTokenClassification": "MODEL_FOR_TOKEN_CLASSIFICATION_MAPPING_NAMES",
    "AutoModelForMaskedLM": "MODEL_FOR_MASKED_LM_MAPPING_NAMES",
    "AutoModelForCausalLM": "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES",
    "AutoModelForQuestionAnswering": "MODEL_FOR_QUESTION_ANSWERING_MAPPING_NAMES",
}


def family(spec: str) -> str:
    """'bert' from 'bert', 'pruned-bert', or a folder whose config.json says either."""
    if os.path.isdir(spec):
        with open(os.path.join(spec, "config.json"), encoding="utf-8") as f:
            spec = json.load(f).get("model_type", "")
    return spec.removeprefix("pruned-")


def _pruning_init(cls):
    def __init__(self, config, *args, **kwargs):
        cls.__init__(self, config, *args, **kwargs)
        from models.prune import prune_heads

        prune_heads(self, getattr(config, "pruned_heads", None) or {})
    return __init__


def register(spec: str) -> type:
    """Register model_type 'pruned-<family>' and its pruned head classes once; returns the config class."""
    import transformers
    from transformers.models.auto import configuration_auto, modeling_auto

    fam = family(spec)
    with _LOCK:
        kind = f"pruned-{fam}"
        if fam in _DONE:
            return configuration_auto.CONFIG_MAPPING[kind]
        if fam not in configuration_auto.CONFIG_MAPPING_NAMES:
            raise ValueError(f"Unknown model family {fam!r}: a pruned export names its family in config.json.")
        base_config = configuration_auto.CONFIG_MAPPING[fam]
        config = type(f"Pruned{base_config.__name__}", (base_config,), {"model_type": kind})
        transformers.AutoConfig.register(kind, config)
        for auto, mapping in AUTOS.items():
            name = getattr(modeling_auto, mapping).get(fam)
            if name is None:
                continue
            cls = getattr(transformers, name)
            pruned = type(f"Pruned{name}", (cls,), {"config_class": config, "__init__": _pruning_init(cls),
                                                    "__module__": __name__})
            getattr(transformers, auto).register(config, pruned)
        _DONE.add(fam)
        return config


def as_pruned_config(config, plan: dict):
    """A copy of a transformers config as model_type 'pruned-<family>' with "pruned_heads" = plan (JSON keys)."""
    cls = register(config.model_type)
    d = config.to_dict()
    d.pop("model_type", None)
    d["pruned_heads"] = {str(k): list(v) for k, v in plan.items()}
    return cls.from_dict(d)

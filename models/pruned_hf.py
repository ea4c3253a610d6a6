"""The pruned format: write (export), register and load pruned models, in one module.

Slicing the heads out is models.prune's; this module writes the result and reads it back.
`export` writes plan.json, the pruned weights as model.safetensors (the task head included, when the
model has one), config.json and a README.md that says how to load it; the tiny decoder's export is one
.safetensors whose metadata carries the plan, which models.tiny.read_weights applies before loading.

transformers 5 keeps one head count for all layers and has no prune_heads. An export therefore writes
config.json with model_type "pruned-<family>" (e.g. "pruned-bert") and "pruned_heads" ({layer: [heads]},
indices of the unpruned model). `register(family or folder)` registers a config class of
that type and, for each task head of the family, a subclass that builds the unpruned model and slices it
(models.prune.prune_heads) before the weights load, so that the same Auto class loads the folder:

    import models.pruned_hf as pruned_hf; pruned_hf.register("PRUNED/")
    AutoModelForSequenceClassification.from_pretrained("PRUNED/")   # PrunedBertForSequenceClassification

Without register(), transformers refuses the folder (unknown model type "pruned-bert"): it never loads
it wrongly. Does not: load remote code, or prune layouts other than BERT's.
"""
from __future__ import annotations

import io
import json
import os
import tempfile
import threading
import zipfile
from dataclasses import asdict

from torch import nn

from models.gates import tiny_attentions
from models.prune import compose, normalise, prune_heads

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


def auto_class(family_name: str, arch: str) -> str:
    """The Auto class that builds `arch` for a family: ('bert', 'BertForMaskedLM') -> 'AutoModelForMaskedLM'"""
    from transformers.models.auto import modeling_auto

    return next((auto for auto, mapping in AUTOS.items()
                 if getattr(modeling_auto, mapping).get(family_name) == arch), "AutoModel")


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
        original = model.config
        full = compose(getattr(original, "pruned_heads", None) or {}, plan, original.num_attention_heads)
        as_json = {str(k): v for k, v in full.items()}
        model.config = as_pruned_config(original, full)
        try:
            model.save_pretrained(folder, safe_serialization=True)
        finally:
            model.config = original
        arch = type(model).__name__.removeprefix("Pruned")
        auto = auto_class(original.model_type.removeprefix("pruned-"), arch)
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

    register(folder)
    model, info = getattr(transformers, auto).from_pretrained(
        folder, attn_implementation="eager", use_safetensors=True, local_files_only=True, output_loading_info=True)
    missing = [k for k in info.get("missing_keys", []) if "position_ids" not in k]
    if missing or info.get("mismatched_keys"):
        raise ValueError(f"The pruned weights in {folder} do not fit its config ({len(missing)} tensors missing): "
                         "export the model again.")
    return model.eval().to(device)

"""The pruned format: write (export), register and load pruned models, in one module.

Slicing the heads out is models.prune's; this module writes the result and reads it back.
`export` writes plan.json, the pruned weights as model.pruned.safetensors (the task head included, when the
model has one), config.json, modeling_pruned.py with pruned_slicing.py beside it, and a README.md that says how to
load it; the tiny decoder's export is one .safetensors whose metadata carries the plan, which
models.tiny.read_weights applies before loading.

transformers 5 keeps one head count for all layers and has no prune_heads. An export therefore writes
config.json with model_type "pruned-<family>" (e.g. "pruned-bert"), "pruned_heads" ({layer: [heads]}, indices
of the unpruned model) and "auto_map", which names the classes of modeling_pruned.py: a copy of
models/pruned_modeling.py (torch and transformers only), so that anywhere transformers is installed

    AutoModelForSequenceClassification.from_pretrained("PRUNED/", trust_remote_code=True)
    pipeline("text-classification", model="PRUNED/", trust_remote_code=True)

build the pruned model, and a stock class (BertForSequenceClassification) refuses the folder (no
model.safetensors) instead of loading it with re-initialised attention. Inside this project `register(family
or folder)` registers the same classes with the Auto classes, so no remote code is run here. The same holds for
GPT-2 and Llama-style decoders (AutoModelForCausalLM, pipeline("text-generation", ...)). Does not: prune layouts
other than models.pruned_modeling.LAYOUTS (BERT, GPT-2, Llama-style, Phi-3, OPT-style with GPT-J and GPT-Neo,
GPT-NeoX, Falcon, CodeGen, CTRL, GPT-BigCode, multi-head latent attention).
"""
from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
import threading
import zipfile
from dataclasses import asdict

from torch import nn

from limits.errors import UserError
from models import pruned_modeling
from models.gates import tiny_attentions
from models.prune import compose, normalise

_LOCK = threading.Lock()
_DONE: dict[str, dict[str, type]] = {}  # family -> its pruned classes, registered with transformers once
SHIPPED = "modeling_pruned.py"  # models/pruned_modeling.py as an export ships it
SHIPPED_WITH = ("pruned_slicing.py", "layer_kinds.py")  # the models/ files it imports relatively, shipped as they are
AUTOS = pruned_modeling.AUTOS


def family(spec: str) -> str:
    """'bert' from 'bert', 'pruned-bert', or a folder whose config.json says either."""
    if os.path.isdir(spec):
        with open(os.path.join(spec, "config.json"), encoding="utf-8") as f:
            spec = json.load(f).get("model_type", "")
    return spec.removeprefix("pruned-")


def register(spec: str) -> type:
    """Register model_type 'pruned-<family>' and its pruned head classes once; returns the config class."""
    import transformers

    fam = family(spec)
    with _LOCK:
        if fam not in _DONE:
            made = pruned_modeling.classes(fam)
            transformers.AutoConfig.register(f"pruned-{fam}", made["AutoConfig"])
            for auto, cls in made.items():
                if auto != "AutoConfig":
                    getattr(transformers, auto).register(made["AutoConfig"], cls)
            _DONE[fam] = made
        return _DONE[fam]["AutoConfig"]


def as_pruned_config(config, plan: dict):
    """A copy of a transformers config as model_type 'pruned-<family>' with "pruned_heads" = plan (JSON keys)."""
    cls = register(config.model_type)
    d = config.to_dict()
    d.pop("model_type", None)
    d.pop("tie_last_hidden_states", None)  # set on the loaded model by models.capture, not the family's own
    d["pruned_heads"] = {str(k): list(v) for k, v in plan.items()}
    module = SHIPPED.removesuffix(".py")
    d["auto_map"] = {auto: f"{module}.{made.__name__}" for auto, made in _DONE[family(config.model_type)].items()}
    return cls.from_dict(d)


def auto_class(family_name: str, arch: str) -> str:
    """The Auto class that builds `arch` for a family: ('bert', 'BertForMaskedLM') -> 'AutoModelForMaskedLM'; a
    causal LM that transformers' causal-LM mapping leaves out (Mistral 4's) too, as the exported folder maps it."""
    from transformers.models.auto import modeling_auto

    from models.hf.families import causal_lm_class

    if arch == causal_lm_class(family_name):
        return "AutoModelForCausalLM"
    return next((auto for auto, mapping in AUTOS.items()
                 if getattr(modeling_auto, mapping).get(family_name) == arch), "AutoModel")


README = """# A pruned model

{heads} attention heads were removed from this {arch} (per layer, in the original model's numbering:
{plan}). The layers now hold different numbers of heads, which a stock transformers config cannot
describe, so config.json names the model type "{kind}", lists the removed heads under "pruned_heads" and
points transformers at modeling_pruned.py (torch and transformers only), which builds the pruned layers:

    model = transformers.{auto}.from_pretrained("<this folder>", trust_remote_code=True)
    tokenizer = transformers.AutoTokenizer.from_pretrained("<this folder>", trust_remote_code=True)
    pipe = transformers.pipeline("{task}", model="<this folder>", trust_remote_code=True)

(The tokenizer reads config.json too, so it is given trust_remote_code as well, or transformers asks.)
The weights are model.pruned.safetensors: a stock class ({arch}) finds no model.safetensors and refuses the
folder, rather than loading the pruned weights into full-size layers with their attention re-initialised.
{groups}"""
TASKS = {"AutoModelForCausalLM": "text-generation",
         "AutoModelForSequenceClassification": "text-classification", "AutoModelForTokenClassification":
         "token-classification", "AutoModelForMaskedLM": "fill-mask", "AutoModelForQuestionAnswering":
         "question-answering", "AutoModel": "feature-extraction"}


def load_line(auto: str) -> str:
    """The one line that loads an export anywhere: 'AutoModel...from_pretrained(OUT, trust_remote_code=True)'."""
    return f"transformers.{auto}.from_pretrained(OUT, trust_remote_code=True)"


def _readme_groups(config, plan: dict) -> str:
    """groups_note for the README's last paragraph, or "" (no shared key/value heads, or none partly used)."""
    kv = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    note = groups_note(plan, config.num_attention_heads, kv)
    return f"\n{note}\n" if note else ""


def groups_note(plan: dict, n_heads: int, n_kv: int) -> str:
    """The one sentence, for the pruning page and an export's README, on the key/value groups a plan leaves partly
    used (GQA) and how each layer whose groups keep unequal numbers of heads is laid out (kv_layout), or ""."""
    part = pruned_modeling.partial_groups(plan, n_heads, n_kv)
    if not part:
        return ""
    g = n_heads // n_kv
    named = "; ".join(f"L{layer}: " + ", ".join(f"group {k} (H{k * g}–H{k * g + g - 1})" for k in ks)
                      for layer, ks in sorted(part.items()))
    unequal = []
    for layer, heads in sorted(normalise(plan).items()):
        head_of, kv, groups = pruned_modeling.kv_layout(heads, [h // g for h in range(n_heads)])
        if groups == 1 and len(kv) > len(set(kv)):
            unequal.append(f"L{layer} gives each of its {len(head_of)} kept query heads its own copy of its group's "
                           f"keys and values, fewer parameters than padding ({len(head_of)} query and {len(kv)} "
                           f"key/value heads for {n_heads} and {n_kv})")
        elif -1 in head_of and len(head_of) > 1:
            unequal.append(f"L{layer} pads each kept group to {groups} query heads with {head_of.count(-1)} silent "
                           f"head{'s' if head_of.count(-1) > 1 else ''} (zero output; {len(head_of)} query and "
                           f"{len(kv)} key/value heads for {n_heads} and {n_kv})")
    how = (" Where a layer's groups keep unequal numbers of heads (transformers needs equal groups), "
           + "; ".join(unequal) + ": never larger than unpruned." if unequal else "")
    return (f"Key/value groups partly removed: {named}. {g} query heads share each key/value head, and a group's "
            "keys and values go only with all its query heads, so these groups keep their keys and values." + how)


def pipeline_line(auto: str) -> str:
    """The pipeline that serves an export: 'transformers.pipeline("text-generation", model=OUT, ...)'"""
    return f'transformers.pipeline("{TASKS.get(auto, "feature-extraction")}", model=OUT, trust_remote_code=True)'


def load_code(auto: str) -> str:
    """The two Python lines every place that shows an export prints: 'model = <load_line>' and
    'pipe = <pipeline_line>'."""
    return f"model = {load_line(auto)}\npipe = {pipeline_line(auto)}"


def _ship_modeling(folder: str, fam: str) -> None:
    """Write models/pruned_modeling.py into the folder as modeling_pruned.py, its FAMILY set to `fam`, and the
    modules it imports relatively (pruned_slicing.py) under their own names: transformers copies them with it."""
    source = open(pruned_modeling.__file__, encoding="utf-8").read()
    line = 'FAMILY = ""'
    assert source.count(line) == 1, "pruned_modeling.py must set FAMILY once"
    with open(os.path.join(folder, SHIPPED), "w", encoding="utf-8") as f:
        f.write(source.replace(line, f"FAMILY = {fam!r}"))
    for name in SHIPPED_WITH:
        shutil.copyfile(os.path.join(os.path.dirname(pruned_modeling.__file__), name), os.path.join(folder, name))


def export(model: nn.Module, plan: dict, folder: str, tokenizer=None) -> list[str]:
    """Write plan.json, config.json (model_type "pruned-…", "pruned_heads", "auto_map"), model.pruned.safetensors,
    modeling_pruned.py and README.md of a model pruned by `plan` (indices of the model before this pruning; a model
    that was already pruned keeps its earlier cuts; a Llama-style model's layers say which original heads they hold,
    so that is read). The tiny decoder: plan.json and model.safetensors with config and plan in its metadata."""
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
        held = pruned_modeling.original_plan(model, {})  # Llama-style: the layers say which original heads they hold
        full = full if held is None else held
        as_json = {str(k): v for k, v in full.items()}
        model.config = as_pruned_config(original, full)
        try:
            model.save_pretrained(folder, safe_serialization=True, variant=pruned_modeling.VARIANT)
        finally:
            model.config = original
        fam = family(original.model_type)
        _ship_modeling(folder, fam)
        arch = type(model).__name__.removeprefix("Pruned")
        auto = auto_class(fam, arch)
        with open(os.path.join(folder, "README.md"), "w", encoding="utf-8") as f:
            f.write(README.format(heads=sum(map(len, full.values())), arch=arch, plan=json.dumps(as_json),
                                  kind=f"pruned-{fam}", auto=auto, task=TASKS.get(auto, "feature-extraction"),
                                  groups=_readme_groups(original, full)))
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
    # an export of an MLM model's encoder has no pooler (BertForMaskedLM builds none): AutoModel adds an unused one
    missing = [k for k in info.get("missing_keys", []) if "position_ids" not in k and not k.startswith("pooler.")]
    if missing or info.get("mismatched_keys"):
        raise UserError(f"The pruned weights in {folder} do not fit its config ({len(missing)} tensors missing): "
                        "export the model again.")
    return model.eval().to(device)

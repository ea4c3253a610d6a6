"""A folder's (or hub id's) model with the task head it was fine-tuned with, found from config.architectures.

    load("./my-sentiment").head -> "sequence classification" (BertForSequenceClassification, its labels)

The head is read from config.json's architectures (BertForSequenceClassification -> sequence classification)
and loaded with the matching AutoModelFor… class: eager attention, .safetensors weights only, never the
model's own code, and in hosted mode hub ids only (limits.check_model_spec). Weights that lack part of the
head are refused rather than filled with random values. A folder models.pruned_hf.export wrote (model_type
"pruned-…") is rebuilt with its per-layer head counts (models.pruned_hf).
Does not: fine-tune, guess a head the config does not name, or gate layouts other than BERT's (models.gates).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import torch
from torch import nn

import limits
from limits.errors import UserError
from models import gates
from models.devices import DTYPES, resolve

# architecture name ending -> (head, Auto class, label kind of data.labelled)
HEADS = {
    "ForSequenceClassification": ("sequence classification", "AutoModelForSequenceClassification", "class"),
    "ForTokenClassification": ("token classification", "AutoModelForTokenClassification", "tags"),
    "ForMaskedLM": ("masked LM", "AutoModelForMaskedLM", "none"),
    "ForCausalLM": ("causal LM", "AutoModelForCausalLM", "none"),
    "LMHeadModel": ("causal LM", "AutoModelForCausalLM", "none"),
    "ForQuestionAnswering": ("question answering", "AutoModelForQuestionAnswering", "span"),
}


@dataclass
class TaskModel:
    """A model with its task head: the module, its tokenizer, and what the head predicts."""

    model: nn.Module              # the whole model, head included; models.gates finds its encoder layers
    tokenizer: object
    head: str                     # "sequence classification", "token classification", "masked LM", ...
    architecture: str             # "BertForSequenceClassification"
    labels: list[str]             # label names in id order (classification heads), else []
    spec: str                     # the folder or hub id it came from
    device: str
    dtype: str
    notices: tuple[str, ...] = field(default_factory=tuple)
    pruned_heads: dict = field(default_factory=dict)  # {"layer": [heads]} an earlier export removed

    @property
    def kind(self) -> str:
        """What one row's label is, as data.labelled reads it: 'class', 'tags', 'span' or 'none'."""
        return next(k for _, (h, _, k) in HEADS.items() if h == self.head)

    @property
    def label(self) -> str:
        counts = gates.head_counts(self.model)
        shape = f"{len(counts)} layers × {max(counts)} heads" + (
            f", {sum(len(v) for v in self.pruned_heads.values())} pruned" if self.pruned_heads else "")
        names = f", {len(self.labels)} labels ({', '.join(self.labels)[:120]})" if self.labels else ""
        return f"{self.architecture}: {self.head} head{names}; {shape}"


def head_of(architectures: list[str] | None) -> tuple[str, str, str]:
    """(architecture, head, Auto class name) from config.architectures; ValueError when none is a task head.
    ['BertForSequenceClassification'] -> ('BertForSequenceClassification', 'sequence classification', 'AutoModel…')"""
    for arch in architectures or []:
        for ending, (head, auto, _) in HEADS.items():
            if arch.endswith(ending):
                return arch, head, auto
    found = ", ".join(architectures or []) or "no architectures"
    raise UserError(f"This model has no task head to judge heads by (its config names {found}): give a folder "
                    "fine-tuned for classification, tagging, question answering or (masked) language modelling, "
                    "or use a built-in example task.")


def _config(spec: str, local: bool) -> dict:
    from transformers import PretrainedConfig

    return PretrainedConfig.get_config_dict(spec, local_files_only=local)[0]


def load(spec: str, device: str = "cpu", dtype: str = "float32") -> TaskModel:
    """The model at `spec` (a folder, or a hub id) with its task head; ValueError with one sentence if not loadable."""
    import transformers
    from safetensors import SafetensorError

    spec = limits.check_model_spec(spec)
    if not spec:
        raise UserError("Give the folder (or hub id) of your fine-tuned model after 'hf:'.")
    device, dtype, notices = resolve(device, dtype)
    local = os.path.isdir(spec)
    where = "that folder" if local else "the hub (is there a network connection?)"
    try:
        config = _config(spec, local)
    except (OSError, ValueError) as err:
        raise UserError(f"Could not read a config.json from {where}: give a folder with config.json, tokenizer "
                        "and .safetensors weights.") from err
    arch, head, auto = head_of(config.get("architectures"))
    pruned = config.get("pruned_heads") or {}
    if str(config.get("model_type", "")).startswith("pruned-"):
        from models import pruned_hf

        pruned_hf.register(config["model_type"][len("pruned-"):])
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(spec, local_files_only=local, trust_remote_code=False)
        model, info = getattr(transformers, auto).from_pretrained(
            spec, attn_implementation="eager", dtype=DTYPES[dtype], use_safetensors=True, trust_remote_code=False,
            local_files_only=local, output_loading_info=True)
    except (OSError, ValueError, KeyError, RuntimeError, SafetensorError) as err:
        raise UserError(f"Could not load '{spec}' as {arch} from {where}: it needs config.json, a tokenizer and "
                        ".safetensors weights that match the config.") from err
    missing = [k for k in info.get("missing_keys", []) if "position_ids" not in k]
    if missing or info.get("mismatched_keys"):
        raise UserError(f"The weights do not hold all of {arch} ({len(missing)} tensors missing, e.g. "
                        f"{(missing or [m[0] for m in info['mismatched_keys']])[0]}): save the fine-tuned model "
                        "with its head (model.save_pretrained).")
    return _checked(model.eval().to(device), tokenizer, head, arch, spec, device, dtype, notices, pruned)


def of(model, spec: str) -> TaskModel | None:
    """The task model of a model models.load gave (an encoder that kept its classifier or masked-LM head: the same
    modules, no second load), or None when it kept no head; UserError as load's when the head is one pruning cannot
    judge."""
    from models.hf.encoders import Encoder

    if not isinstance(model, Encoder) or (model.task is None and model.mlm is None):
        return None
    task, head = (model.task, model.task_head) if model.task is not None else (model.mlm, "masked LM")
    arch = (task.config.architectures or [type(task).__name__])[0]
    return _checked(task, model.tokenizer, head, arch, spec, model.device, model.dtype, tuple(model.notices),
                    model.pruned_heads)


def _checked(model: nn.Module, tokenizer, head: str, arch: str, spec: str, device: str, dtype: str,
             notices: tuple, pruned: dict) -> TaskModel:
    """The loaded task model, checked for what gates and pruning need, with its labels."""
    try:
        gates.head_counts(model)
    except ValueError as err:
        raise UserError(f"Found a {head} head ({arch}), but head gates and pruning here need a BERT-style encoder "
                        "(BERT, RoBERTa, ELECTRA, MiniLM).") from err
    labels = [str(model.config.id2label[i]) for i in range(model.config.num_labels)] if head.endswith(
        "classification") else []
    if head == "sequence classification" and (len(labels) < 2 or model.config.problem_type == "regression"):
        raise UserError(f"{arch} here is a regression head ({len(labels)} output): pruning here measures "
                        "classification heads (2 or more labels).")
    if tokenizer.pad_token is None and tokenizer.eos_token is not None:  # GPT-2's and many causal LMs' tokenizers
        tokenizer.pad_token = tokenizer.eos_token  # set once at load; padded places are masked out of every loss
        notices = (*notices, f"This tokenizer has no padding token: rows are padded with its end token "
                   f"{tokenizer.eos_token!r}, which the loss and the metric leave out.")
    return TaskModel(model=model, tokenizer=tokenizer, head=head, architecture=arch, labels=labels, spec=spec,
                     device=device, dtype=dtype, notices=notices, pruned_heads=pruned)


def nbytes(model: nn.Module) -> tuple[int, int]:
    """(parameters, bytes) of a model, tied weights counted once."""
    seen = {p.data_ptr(): p for p in model.parameters()}.values()
    return sum(p.numel() for p in seen), sum(p.numel() * p.element_size() for p in seen)


def to_float64(model: nn.Module) -> nn.Module:
    """A float64 copy on the cpu (for checks whose answer must not depend on summation order)."""
    import copy

    return copy.deepcopy(model).to("cpu", torch.float64)

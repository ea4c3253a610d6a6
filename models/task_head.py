"""A folder's (or hub id's) model with the task head it was fine-tuned with, found from config.architectures.

    load("./my-sentiment").head -> "sequence classification" (BertForSequenceClassification, its labels)

The model is the one models.load gives (its loading rules: eager attention, .safetensors weights only, never the
model's own code, hosted mode hub ids only, a pruned export rebuilt with its cuts), which keeps the head config.json's
architectures name (BertForSequenceClassification -> sequence classification); this module names what that head
predicts and reads its labels. Weights that lack the head are refused rather than filled with random values.
Does not: load weights itself, fine-tune, guess a head the config does not name, or gate a layout models.gates does
not know.
"""
from __future__ import annotations

import copy
import weakref
from dataclasses import dataclass, field

import torch
from torch import nn

from limits.errors import UserError
from models import gates

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
    family: str = "encoder"       # models.contract.FAMILIES: the family of the model models.load gave
    predicts: str | None = None   # models.contract.PREDICTS: what that model says it predicts

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


def load(spec: str, device: str = "cpu", dtype: str = "float32") -> TaskModel:
    """The model models.load gives for the folder (or hub id) `spec`, seen through the task head it kept (judged()):
    one loader, one set of modules. UserError with one sentence when it kept none (the config names no task head, or
    the weights lack it) or the head is one pruning cannot judge."""
    import models

    spec = (spec or "").strip()
    if not spec:
        raise UserError("Give the folder (or hub id) of your fine-tuned model after 'hf:'.")
    return judged(models.load(models.HF_PREFIX + spec, device, dtype), spec)


def judged(model, spec: str) -> TaskModel:
    """of(model, spec), or UserError with the sentence saying why the model kept no head pruning can judge by."""
    task = of(model, spec)
    if task is not None:
        return task
    arch, head, _ = head_of(getattr(model.config, "architectures", None))  # UserError: the config names no head
    if model.family not in ("encoder", "decoder") or (model.family == "decoder" and not head.endswith(
            ("classification", "LM"))):
        article = "an" if model.family[0] in "aeiou" else "a"
        raise UserError(f"{arch}'s {head} head is not one this app keeps for {article} {model.family} (an encoder "
                        "keeps any task head, a decoder its language-model head or a classifier), so pruning here "
                        "cannot judge heads by it.")
    raise UserError(f"The weights do not hold the head of {arch}: save the fine-tuned model with its head "
                    "(model.save_pretrained).")


def of(model, spec: str) -> TaskModel | None:
    """The task model of a model models.load gave: the same modules, no second load. An encoder that kept its task
    head (a classifier, a tagger, question answering, a BERT-style causal LM) or its masked-LM head, or a decoder
    with its classifier or its language-model head; None when it kept no head. UserError as load's when the head is
    one pruning cannot judge."""
    from models.hf.decoders import Decoder
    from models.hf.encoders import Encoder

    if isinstance(model, Encoder) and (model.task is not None or model.mlm is not None):
        task, head = (model.task, model.task_head) if model.task is not None else (model.mlm, "masked LM")
        pruned = model.pruned_heads
    elif isinstance(model, Decoder) and (model.task is not None or model.lm):
        task, head = (model.task, model.task_head) if model.task is not None else (model.model, "causal LM")
        pruned = {str(k): v for k, v in (getattr(model.config, "pruned_heads", None) or {}).items()}
    else:
        return None
    arch = (task.config.architectures or [type(task).__name__])[0]
    return _checked(task, model.tokenizer, head, arch, spec, model.device, model.dtype, tuple(model.notices), pruned,
                    model.family, model.predicts)


def _checked(model: nn.Module, tokenizer, head: str, arch: str, spec: str, device: str, dtype: str,
             notices: tuple, pruned: dict, family: str, predicts: str | None) -> TaskModel:
    """The loaded task model, checked for what gates and pruning need, with its labels."""
    try:
        gates.head_counts(model)
    except ValueError as err:
        raise UserError(f"Found a {head} head ({arch}), but head gates and pruning here do not know where this "
                        f"model's heads are: {err}") from err
    labels = [str(model.config.id2label[i]) for i in range(model.config.num_labels)] if head.endswith(
        "classification") else []
    if head == "sequence classification" and (len(labels) < 2 or model.config.problem_type == "regression"):
        raise UserError(f"{arch} here is a regression head ({len(labels)} output): pruning here measures "
                        "classification heads (2 or more labels).")
    if tokenizer.pad_token is None and tokenizer.eos_token is not None:  # GPT-2's and many causal LMs' tokenizers
        tokenizer = _padding(tokenizer)  # padded places are masked out of every loss
        notices = (*notices, f"This tokenizer has no padding token: rows are padded with its end token "
                   f"{tokenizer.eos_token!r}, which the loss and the metric leave out.")
    return TaskModel(model=model, tokenizer=tokenizer, head=head, architecture=arch, labels=labels, spec=spec,
                     device=device, dtype=dtype, notices=notices, pruned_heads=pruned, family=family,
                     predicts=predicts)


_PADDING: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # a shared tokenizer -> its copy that pads


def _padding(tokenizer):
    """A copy of `tokenizer` that pads with its end token, made once per tokenizer: the model's own is shared by
    every view and session and is never changed, and a page run reuses the copy rather than copying again."""
    padded = _PADDING.get(tokenizer)
    if padded is None:
        padded = copy.deepcopy(tokenizer)
        padded.pad_token = padded.eos_token
        padded = _PADDING.setdefault(tokenizer, padded)
    return padded


def nbytes(model: nn.Module) -> tuple[int, int]:
    """(parameters, bytes) of a model, tied weights counted once."""
    seen = {p.data_ptr(): p for p in model.parameters()}.values()
    return sum(p.numel() for p in seen), sum(p.numel() * p.element_size() for p in seen)


def to_float64(model: nn.Module) -> nn.Module:
    """A float64 copy on the cpu (for checks whose answer must not depend on summation order)."""
    return copy.deepcopy(model).to("cpu", torch.float64)

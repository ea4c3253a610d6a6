"""Encoders through transformers (BERT, RoBERTa, DistilBERT, ELECTRA, ALBERT, DeBERTa-v2 wired by hand; XLM-RoBERTa
and any other masked LM transformers builds for attention): the packaged MiniLM by default, any folder or hub id.

Returns real attention from the model's own forward pass (eager math: models.capture's record for an architecture not
wired by hand whose family uses transformers' registry, else output_attentions).
When the weights hold the task head config.json names (a classifier, a tagger, question answering, a BERT-style
causal LM), the model is loaded with it (Encoder.task), else with a masked-LM head they hold (Encoder.mlm);
Encoder.model is then its base encoder. A folder that models.pruned_hf.export wrote (config with "pruned_heads")
is rebuilt with models.pruned_hf.load_pruned. Does not fine-tune or gate heads here; nothing here downloads unless
the user names a hub id. Loading rules (safetensors, no remote code) are models.hf.common's.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

import numpy as np
import torch

import limits
from analysis.trace import AttentionTrace, HeadQKV
from limits.errors import UserError
from models import layout
from models.devices import DTYPES
from models.hf import common
from models.hf.common import check_text, minilm_path
from models.hf.writing import lm_steps, prompt_tensor

__all__ = ["Encoder", "load", "load_encoder", "has_mlm_head", "pruned_plan", "check_text", "minilm_path"]

# BERT, RoBERTa, ELECTRA, DistilBERT, ALBERT, DeBERTa-v2
MLM_HEADS = ("cls.predictions.", "lm_head.", "generator_predictions.", "generator_lm_head.", "vocab_projector.",
             "predictions.", "lm_predictions.", "pred_layer.")  # pred_layer: XLM's and FlauBERT's
# layouts with encoder.layer[i].attention.self.query/key/value: models.internals and models.gates read them
BERT_LAYOUT = layout.BERT
# architecture name ending -> (head, Auto class, the prefixes of its head's weights): a folder fine-tuned for a task
# keeps that head. Classifiers: BERT, RoBERTa, ELECTRA, DeBERTa-v2, ALBERT, XLM-R classifier.*, DistilBERT
# pre_classifier.* too, decoders (GPT-2, Llama, ...) score.*; question answering qa_outputs.*; a BERT-style causal LM
# (BertLMHeadModel) its LM head.
TASK_HEADS = {
    "ForSequenceClassification": ("sequence classification", "AutoModelForSequenceClassification",
                                  ("classifier.", "pre_classifier.", "score.")),
    "ForTokenClassification": ("token classification", "AutoModelForTokenClassification", ("classifier.", "score.")),
    "ForQuestionAnswering": ("question answering", "AutoModelForQuestionAnswering", ("qa_outputs.",)),
    "LMHeadModel": ("causal LM", "AutoModelForCausalLM", MLM_HEADS),
    "ForCausalLM": ("causal LM", "AutoModelForCausalLM", MLM_HEADS),
}
CLASSIFIES = ("sequence classification", "token classification")  # the heads whose prediction is a class
CLASSIFIERS = {k: v for k, v in TASK_HEADS.items() if v[0] in CLASSIFIES}  # what a decoder keeps beside an LM head


@dataclass(kw_only=True)
class Encoder(common.HFModel):
    """A loaded encoder: the transformers module, its tokenizer, and where it runs."""

    tokenizer: object
    mlm: torch.nn.Module | None = None  # the masked-LM model around `model`, when the weights have its head
    # the task model around `model` when config.json names one and the weights hold its head (TASK_HEADS): "sequence
    # classification", "token classification", "question answering" or "causal LM" (one model for every view)
    task: torch.nn.Module | None = None
    task_head: str | None = None
    pruned_heads: dict = field(default_factory=dict)  # {"layer": [heads]} removed by models.pruned_hf.export
    family = "encoder"

    @property
    def predicts(self) -> str | None:
        """models.contract.PREDICTS: a classifier's class, a masked-LM head's token at a mask, else nothing (a
        question-answering head's span and a BERT-style causal LM's next token are not explained here: the pruning
        lab judges them by their own loss)."""
        if self.task is not None:
            return "class" if self.task_head in CLASSIFIES else None
        return "target token" if self.mlm is not None else None

    @property
    def causal(self) -> bool:
        """Whether it runs as a decoder, each token seeing only those before (runs_causal)."""
        return runs_causal(self.config)

    def why_not_writing(self) -> str | None:
        """Why a model with a causal-LM head predicts no next token here (its config does not set is_decoder, so it
        attends both ways), or None where it writes or holds no such head."""
        if self.task_head != "causal LM" or self.causal:
            return None
        return (f"This {self.config.model_type} holds a causal-LM head, but its config does not set is_decoder, so "
                "each token reads the whole text and it predicts no next token here: set is_decoder to true in its "
                "config.json.")

    @property
    def next_token_model(self) -> torch.nn.Module | None:
        """The module whose forward gives next-token logits: the causal LM its load kept (BertLMHeadModel and its
        kin), else None. It predicts next tokens only where `writes` (run causal)."""
        return self.task if self.task_head == "causal LM" else None

    @property
    def writes(self) -> bool:
        """Whether it writes text token by token: a BERT-style causal LM run causal with its head kept (Next token
        shows its probabilities and appends with it; its logit is not split, see models.residual.why_not)."""
        return self.causal and self.task_head == "causal LM"

    def prompt(self, text: str, room: int = 0) -> tuple[torch.Tensor, tuple[str, ...]]:
        """A writing model's prompt ids (1, T): the text as its tokenizer frames it, less the end mark ([SEP]) it
        appends, as a decoder's (models.hf.writing.prompt_tensor)."""
        return prompt_tensor(self.tokenizer, text, self.max_tokens, self.device, room)

    def steps(self, ids: torch.Tensor, new_tokens: int, use_cache: bool = True, stop: int | None = None,
              choose=None):
        """A writing model's tokens after ids (1, T), as a decoder's steps, with its causal LM and its cache."""
        return lm_steps(self.task, ids, new_tokens, use_cache, stop, choose)

    @property
    def max_tokens(self) -> int:
        """Positions the model can embed, at most the tokenizer's length (common.embedded_positions)."""
        return common.embedded_positions(self.model, self.tokenizer)

    def encode(self, text: str, text_b: str | None = None) -> tuple[dict, tuple[str, ...]]:
        """Tokenise (a pair when text_b is given), truncating to max_tokens with a notice."""
        text = check_text(text)
        text_b = text_b.strip() if text_b and text_b.strip() else None
        if text_b is not None:
            text_b = text_b[:limits.current().text_chars]
        full = self.tokenizer(text, text_b, truncation=False, verbose=False)["input_ids"]
        enc = self.tokenizer(text, text_b, truncation=True, max_length=self.max_tokens, return_tensors="pt")
        dropped = len(full) - enc["input_ids"].shape[1]
        notes = (f"Truncated to {self.max_tokens} tokens ({dropped} dropped).",) if dropped > 0 else ()
        return {k: v.to(self.device) for k, v in enc.items()}, notes

    @torch.no_grad()
    def attend(self, text: str, text_b: str | None = None) -> AttentionTrace:
        enc, notes = self.encode(text, text_b)
        attentions = common.self_attentions(self.model, **enc)  # per layer (1, H, T, T)
        if self.pruned_heads:  # layers hold fewer heads: put each back at its original index, blank where pruned
            attentions, notes = common.unpruned(attentions, self.pruned_heads, self.model.config.num_attention_heads,
                                                notes)
        weights = torch.stack(attentions, dim=1)[0]  # (L, H, T, T) from (B, L, H, T, T)
        tokens = self.tokenizer.convert_ids_to_tokens(enc["input_ids"][0].tolist())
        return AttentionTrace(
            tokens=tokens,
            key_tokens=list(tokens),
            weights=weights.float().cpu().numpy().astype(np.float32),
            kind="causal" if self.causal else "self",
            output=None,
            notices=notes,
        )

    def head_qkv(self, text: str, layer: int, head: int, text_b: str | None = None) -> HeadQKV:
        """Q, K, V of one head computed from the model's own layers (models.internals), for the inside-a-head view."""
        from models.internals import captured_head, head_qkv, inside_head_refusal

        why = inside_head_refusal(self)  # pruned heads, or a layout neither recomputed nor captured
        if why:
            raise UserError(why)
        if self.model.config.model_type not in BERT_LAYOUT:  # read from the capture
            enc = self.tokenizer(check_text(text), text_b, return_tensors="pt", truncation=True).to(self.device)
            tokens = self.tokenizer.convert_ids_to_tokens(enc["input_ids"][0].tolist())
            return captured_head(self.model, dict(enc), tokens, layer, head, causal=self.causal)
        return head_qkv(self.model, self.tokenizer, check_text(text), layer, head, text_b)


def task_head_of(spec: str, local: bool, heads: dict = TASK_HEADS) -> tuple[str, str, tuple[str, ...]] | None:
    """(head, Auto class name, its weights' prefixes) when config.json's architectures name a task head of `heads`
    and the weights hold it (read from the file headers, no tensors loaded), else None: ('sequence classification',
    'AutoModelForSequenceClassification', (...)) for a BertForSequenceClassification."""
    architectures = common.read_config(spec, local).architectures or ()
    for ending, (head, auto, prefixes) in heads.items():
        if any(a.endswith(ending) for a in architectures):
            names = common.weight_names(spec, local)
            return (head, auto, prefixes) if any(k.startswith(prefixes) for k in names) else None
    return None


def runs_causal(cfg) -> bool:
    """Whether an encoder's config runs it as a decoder: is_decoder (a BERT-style causal LM) or causal (XLM's and
    FlauBERT's causal language models)."""
    return bool(getattr(cfg, "is_decoder", False) or getattr(cfg, "causal", False))


def _lm_head(spec: str, local: bool, found):
    """A task head found by its class's name (task_head_of), settled where a class is both a masked and a causal LM:
    XLMWithLMHeadModel and FlaubertWithLMHeadModel are their type's masked LM, and its causal LM where the config sets
    causal. Not causal: None (loaded as the masked LM it is). Causal, and transformers maps no causal-LM class to the
    type (FlauBERT): the same class, through the masked-LM auto class that maps it. Else `found` unchanged."""
    from transformers.models.auto import modeling_auto

    if found is None or found[0] != "causal LM":
        return found
    cfg = common.read_config(spec, local)
    masked = modeling_auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES.get(cfg.model_type)
    if masked not in (cfg.architectures or ()):
        return found
    if not runs_causal(cfg):
        return None
    if cfg.model_type not in modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return found[0], "AutoModelForMaskedLM", found[2]
    return found


def has_mlm_head(spec: str, local: bool) -> bool:
    """True when the weights name a masked-LM head (read from the file headers, no tensors loaded)."""
    return any(k.startswith(MLM_HEADS) for k in common.weight_names(spec, local))


def pruned_plan(spec: str, local: bool) -> dict:
    """The "pruned_heads" of a folder's config.json ({} when absent or not a folder)."""
    path = os.path.join(spec, "config.json")
    if not local or not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return json.load(f).get("pruned_heads") or {}


def load(name: str = "bert", device: str = "cpu", dtype: str = "float32") -> Encoder:
    """Registry entry: 'bert' is the packaged MiniLM-L6."""
    enc = load_encoder(minilm_path(), device, dtype)
    enc.label = "MiniLM-L6, BERT architecture, 6 layers × 12 heads"
    return enc


def load_encoder(spec: str, device: str = "cpu", dtype: str = "float32", local: bool | None = None) -> Encoder:
    """Any encoder from a local folder or a hub id; ValueError with one sentence if not loadable.

    Weights only from .safetensors, never the model's own code. models.load checks a user's spec first
    (limits.check_model_spec: hub ids only in hosted mode); the packaged MiniLM comes here as a folder.
    An exported pruned model is rebuilt with its cuts; a model keeps its task head (TASK_HEADS) as .task, or its MLM
    head as .mlm.
    """
    import transformers

    from models.pruned_hf import load_pruned

    spec, local, device, dtype, notices = common.place(spec, local, device, dtype)
    mlm = task = head = None
    with common.loading(spec, local):
        plan = pruned_plan(spec, local)
        tokenizer = common.tokenizer(spec, local)
        found = _lm_head(spec, local, task_head_of(spec, local))
        auto = found[1] if found else "AutoModelForMaskedLM" if has_mlm_head(spec, local) else "AutoModel"
        whole = (load_pruned(spec, device, auto).to(DTYPES[dtype]) if plan
                 else common.pretrained(getattr(transformers, auto), spec, local, dtype, found[2] if found else ()))
    whole.eval().to(device)
    if found:
        task, head = whole, found[0]
    elif auto == "AutoModelForMaskedLM":
        mlm = whole
    model = whole if task is None and mlm is None else whole.base_model
    cfg = model.config
    layers, heads = cfg.num_hidden_layers, cfg.num_attention_heads
    label = f"{common.name_of(spec)} ({cfg.model_type}, {layers} layers × {heads} heads"
    if plan:
        label += f", {sum(len(v) for v in plan.values())} heads pruned"
    label += f", with its {head or 'masked-LM'} head)" if task is not None or mlm is not None else ")"
    return Encoder(model=model, tokenizer=tokenizer, label=label, device=device, dtype=dtype, notices=notices, mlm=mlm,
                   task=task, task_head=head, pruned_heads=plan)

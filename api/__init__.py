"""Attention Explorer as a library: what the views compute, for a notebook or a script, as numpy arrays and pandas
DataFrames. These names are the stable import path (the modules they call may move between releases):

    import api
    m = api.load("bert")                                  # any registry key or "hf:<folder>"
    t = api.attend(m, "The river bank was dirty")         # AttentionTrace: .tokens, .weights [L, H, T, T]
    api.heads(t)                                          # DataFrame: a row per head, behaviour scores and label
    api.rollout(t), api.flow(t)                           # [T, T] arrays (Abnar & Zuidema 2020)
    api.corpus(m, sentences)                              # DataFrame: a row per head, behaviours over the corpus
    api.next_token(m, "for i in range(10):")              # DataFrame of the logit's parts (head, MLP, ...)
    api.patching(m, clean, corrupt, answer, wrong)        # DataFrame: restored fraction per head
    api.importance(m, text)                               # DataFrame: gradient importance per head, on a task

Each call runs the model (nothing is cached here: wrap calls in functools.cache as you like); errors a user can fix
are ValueError with one sentence, as in the app. Does not draw (viz/ does) and does not import streamlit.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from analysis import patterns
from analysis.flow import attention_flow
from analysis.rollout import rollout as _rollout
from analysis.trace import AttentionTrace

__all__ = ["load", "attend", "heads", "rollout", "flow", "corpus", "next_token", "patching", "importance"]


def load(name: str, device: str = "cpu", dtype: str = "float32"):
    """A model by registry key ("bert", "gpt", "tiny", "induction", ...) or "hf:<folder or hub id>"."""
    import models

    return models.load(name, device, dtype)


def attend(model, text: str, text_b: str | None = None) -> AttentionTrace:
    """The model's attention on `text` (a second text for sentence pairs or a decoder's target)."""
    return model.attend(text, text_b) if text_b else model.attend(text)


def _per_head(tables: dict[str, np.ndarray]) -> pd.DataFrame:
    """{name: [L, H]} -> DataFrame with layer, head and a column per name."""
    n_layers, n_heads = next(iter(tables.values())).shape
    layer, head = np.divmod(np.arange(n_layers * n_heads), n_heads)
    return pd.DataFrame({"layer": layer, "head": head, **{k: np.asarray(v).ravel() for k, v in tables.items()}})


def heads(trace: AttentionTrace) -> pd.DataFrame:
    """Every head of one trace: the Find a head behaviours (previous token, [CLS], broad, induction, ...) and the
    Clark et al. label, one row per (layer, head)."""
    stats = patterns.sentence_stats(trace.weights, trace.tokens)                          # (L, H, F)
    table = _per_head(patterns.behaviour_scores(trace.weights, trace.tokens))
    table["label"] = [name for row in patterns.labels(stats) for name in row]
    return table


def rollout(trace: AttentionTrace, residual: float = 0.5, fusion: str = "mean") -> np.ndarray:
    """Attention rollout [T, T]: row i says how much of input token j reaches position i after the last layer."""
    return _rollout(trace.weights, residual=residual, fusion=fusion)


def flow(trace: AttentionTrace, residual: float = 0.5, fusion: str = "mean") -> np.ndarray:
    """Exact attention flow [T, T] (max-flow through the layered graph), rows normalised."""
    return attention_flow(trace.weights, residual=residual, fusion=fusion)


def corpus(model, sentences: list[str], folder=None) -> pd.DataFrame:
    """Heads across a corpus: each head's mean behaviours over `sentences` and the share of sentences on which it
    shows its label ("consistency"), one row per head. Shards are cached on disk as in the app (folder: where)."""
    from experiments import corpus as ec

    result = ec.run(model, sentences, folder=None if folder is None else Path(folder))
    return _per_head(ec.head_scores(result.stats))


def next_token(model, text: str, target: str | None = None) -> pd.DataFrame:
    """Direct logit attribution of the decoder's next token: one row per part ("embed", "L0H1", "L0.mlp", "bias")
    and its share of the target's logit; .attrs holds "target", "logit" (the model's own) and the logit lens."""
    from experiments.logit_lens import decompose

    d = decompose(model, text, target)
    table = pd.DataFrame({"part": list(d.parts), "logit": list(d.parts.values())})
    table.attrs.update(target=d.target, logit=d.logit, lens=d.lens)
    return table


def patching(model, clean: str, corrupt: str, answer: str, wrong: str) -> pd.DataFrame:
    """Activation patching of each head's output from the clean run into the corrupted one: the fraction of the
    logit difference (answer - wrong) it restores, one row per head; .attrs holds clean_diff and corrupt_diff."""
    from experiments.patching import patch_heads

    p = patch_heads(model, clean, corrupt, answer, wrong)
    table = _per_head({"restored": p.scores})
    table.attrs.update(clean_diff=p.clean_diff, corrupt_diff=p.corrupt_diff)
    return table


def importance(model, text: str = "", n: int = 16) -> pd.DataFrame:
    """Gradient importance of each head (|∂ loss / ∂ gate|, rows l2-normalised, Michel et al. 2019) on the task the
    Pruning view uses for this model (the paraphrase task for MiniLM over n pairs, sorting for the tiny decoder,
    masked-LM on `text` for an encoder with that head), and the confidence of each head."""
    from experiments import prune_tasks

    grad, conf, _ = prune_tasks.for_model(model, text).score(n, None)
    return _per_head({"importance": grad, "confidence": conf})

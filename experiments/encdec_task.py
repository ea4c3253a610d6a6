"""The target's next-token prediction as the task that judges an encoder-decoder's heads (T5, BART, Marian).

Each built-in paraphrase pair (data.paraphrases) is one source and one target: the encoder reads the first
sentence, the decoder reads the second with teacher forcing (transformers' own shift right from the decoder start
token). Loss: the model's own mean next-token cross-entropy over the target's tokens (`model(**batch).loss`);
metric: the share of target tokens whose top prediction is right. Scoring pairs are the first n_score, metric
pairs start after the most scoring can read (SCORE_MAX), so the two never overlap. Gates reach every stack's heads
through models.gates: the rows are models.sites.head_sites' order, the encoder's layers, the decoder's
self-attention layers, then its cross-attention layers (stack_names()). Does not prune weights for real.

    grads, conf, labels = score_heads(t5, 16)        # [encoder + decoder self + cross layers, H] each
    metric = held_out_metric(t5, 30)                 # plan -> target-token accuracy with plan's heads at 0
"""
from __future__ import annotations

import numpy as np
import torch

from analysis import patterns
from data.paraphrases import load_pairs
from experiments.importance import confidence, gated_metric, gradient_importance
from limits.errors import UserError
from models.sites import head_sites

BATCH = 8        # pairs per gradient batch (the progress bar moves once per batch)
SCORE_MAX = 40   # the most pairs importance may read; metric pairs start here
MAX_TOKENS = 64  # source and target each cut here (or at the model's context)


def pairs(m, first: int, n: int) -> dict:
    """Pairs first..first+n as one batch: input_ids, attention_mask (n, S) and labels (n, T), -100 on padding."""
    chosen = load_pairs()[first:first + n]
    if len(chosen) < n:
        raise UserError(f"There are {len(load_pairs()) - first} held-out pairs here: ask for at most that many.")
    size = min(MAX_TOKENS, m.max_tokens)
    enc = m.tokenizer([a for a, _ in chosen], text_target=[b for _, b in chosen], padding=True, truncation=True,
                      max_length=size, return_tensors="pt")
    labels = enc["labels"].masked_fill(enc["labels"] == m.tokenizer.pad_token_id, -100)   # (n, T)
    return {"input_ids": enc["input_ids"].to(m.device), "attention_mask": enc["attention_mask"].to(m.device),
            "labels": labels.to(m.device)}


def loss(net, batch: dict) -> torch.Tensor:
    """The model's own teacher-forced next-token loss on the targets."""
    return net(**batch).loss


@torch.no_grad()
def accuracy(net, batch: dict) -> float:
    """Share of target tokens whose top prediction is the token."""
    logits = net(**batch).logits                                            # (B, T, V)
    scored = batch["labels"] != -100
    return float((logits.argmax(-1) == batch["labels"])[scored].float().mean())


def stack_names(m) -> list[str]:
    """What each row of the importance grid is: ['encoder 0', ..., 'decoder 0 self', ..., 'decoder 0 cross', ...]."""
    return [s.name for s in head_sites(m.model)]


def about(n: int) -> str:
    return (f"{n} held-out paraphrase pairs: the second sentence as the target of the first, teacher forcing; "
            "next-token accuracy over the target's tokens")


def held_out_metric(m, n_eval: int):
    """metric(plan) -> target-token accuracy on n_eval pairs after the scoring ones, plan's heads gated to 0."""
    held = pairs(m, SCORE_MAX, n_eval)
    return gated_metric(m.model, lambda net: accuracy(net, held))


def _pad(rows: np.ndarray, width: int, fill) -> np.ndarray:
    return np.pad(rows, ((0, 0), (0, width - rows.shape[1])), constant_values=fill) if rows.shape[1] < width else rows


def score_heads(m, n_score: int, n_sentences: int = 12, progress=None) -> tuple:
    """Gradient importance [sites, H] of the target loss on n_score pairs; confidence [sites, H] and pattern labels
    from each stack's attention over the first n_sentences pairs read with teacher forcing (cross rows: 'cross')."""
    batch = pairs(m, 0, n_score)
    batches = [{k: v[i:i + BATCH] for k, v in batch.items()} for i in range(0, n_score, BATCH)]
    grads = gradient_importance(m.model, loss, batches, progress=progress)
    traces = [m.attend(a, b) for a, b in load_pairs()[:n_sentences]]
    enc, dec = [t.parts["encoder"] for t in traces], [t.parts["decoder"] for t in traces]
    width = grads.shape[1]
    conf = np.concatenate([_pad(confidence([t.weights for t in part]), width, np.nan) for part in (enc, dec, traces)])
    labels = []
    for part in (enc, dec):
        labels += patterns.labels(patterns.head_stats([t.weights for t in part], [t.tokens for t in part]))
    labels += [["cross"] * traces[0].weights.shape[1] for _ in range(traces[0].weights.shape[0])]
    return grads, conf, labels

"""Next-token prediction as the task that judges a decoder's heads: held-out windows of Python documentation.

The built-in `gpt` reads the windows its training script held out (models.gpt_windows, via
experiments.precision.lm_windows); any other decoder reads the same documents through its own tokenizer. Loss:
the mean next-token cross-entropy over the scored positions; metric: the share of them whose top prediction is the
next token. Importance windows and metric windows are disjoint (the first n_score, then the next n_eval).
Gates reach every family's heads (models.gates); does not prune for real (slicing is BERT's and the tiny decoder's).

    grads, conf, labels = score_heads(decoder, "gpt", 8)
    metric = held_out_metric(decoder, "gpt", 8)   # plan -> next-token accuracy with plan's heads at 0
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from analysis import patterns
from data.paraphrases import load_pairs
from experiments.importance import confidence, gated_metric, gradient_importance
from experiments.precision import lm_windows
from limits.errors import UserError

BATCH = 4  # windows per gradient batch (the progress bar moves once per batch)


def windows(decoder, name: str, first: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Windows first..first+n of the held-out text: ids (n, T) and labels (n, T), -100 where not scored."""
    ids, labels, _ = lm_windows(decoder, name, first + n)
    if len(ids) < first + n:
        raise UserError(f"The held-out text gives {len(ids)} windows of this decoder: ask for at most "
                        f"{max(len(ids) - first, 1)}.")
    return ids[first:first + n], labels[first:first + n]


def loss(net, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Mean next-token cross-entropy of a batch of windows."""
    ids, labels = batch
    logits = net(input_ids=ids).logits[:, :-1]                              # (B, T-1, V)
    logits = logits.to(torch.promote_types(logits.dtype, torch.float32))
    return F.cross_entropy(logits.flatten(0, 1), labels[:, 1:].flatten(), ignore_index=-100)


@torch.no_grad()
def accuracy(net, batch: tuple[torch.Tensor, torch.Tensor]) -> float:
    """Share of scored positions whose top prediction is the next token."""
    ids, labels = batch
    target = labels[:, 1:]                                                  # (B, T-1)
    scored = target != -100
    hit = net(input_ids=ids).logits[:, :-1].argmax(-1) == target
    return float(hit[scored].float().mean())


def about(decoder, name: str, n: int) -> str:
    """'8 held-out windows of 128 tokens of the Python reference (...)'."""
    return lm_windows(decoder, name, n)[2]


def held_out_metric(decoder, name: str, n_score: int, n_eval: int):
    """metric(plan) -> next-token accuracy on n_eval windows after the scoring ones, plan's heads gated to 0."""
    held = windows(decoder, name, n_score, n_eval)
    return gated_metric(decoder.model, lambda m: accuracy(m, held))


def score_heads(decoder, name: str, n_score: int, n_sentences: int = 24, progress=None) -> tuple:
    """Gradient importance [L, H] of the next-token loss on n_score windows, confidence [L, H] and pattern labels
    from the attention over the first n_sentences built-in sentences."""
    ids, labels = windows(decoder, name, 0, n_score)
    batches = [(ids[i:i + BATCH], labels[i:i + BATCH]) for i in range(0, len(ids), BATCH)]
    grads = gradient_importance(decoder.model, loss, batches, progress=progress)
    traces = [decoder.attend(a) for a, _ in load_pairs()[:n_sentences]]
    weights, tokens = [t.weights for t in traces], [t.tokens for t in traces]
    return grads, confidence(weights), patterns.labels(patterns.head_stats(weights, tokens))

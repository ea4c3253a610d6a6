"""The tiny decoder's own task for head importance: sort 1-10 digits (loss and metric).

Loss: cross-entropy on the answer tokens and the closing '.', with teacher forcing (the prompt is
not scored), exactly as train/tiny.py trained it. Metric: exact match on held-out strings:
the first n of the 2,000 strings the shipped weights were measured on (train_tiny's held-out seed).
Exact match is read from one teacher-forced pass: every answer token being the argmax there is the
same as greedy generation being right, because the first wrong token is where the two would part.
Scoring strings come from their own seed, so importance is not fitted to the held-out strings.
Does not train; the model's gates (models.gates) decide which heads take part.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from analysis import patterns
from data.sorting import SCORE_SEED, batch, held_out, strings
from experiments.importance import confidence, gated_metric, gradient_importance


def encode(items: list[str], device: str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs (B, 21) and targets (B, 21): the answer and '.' where scored, -1 elsewhere."""
    x, y = batch(items)
    return x.to(device), y.to(device)


def loss(net, inputs: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Mean cross-entropy of the answer tokens under teacher forcing."""
    x, y = inputs
    logits, _ = net(x)                                                    # (B, T, V)
    logits = logits.to(torch.promote_types(logits.dtype, torch.float32))  # fp16/bf16 -> fp32, fp64 kept
    return F.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=-1)


def exact_match(net, inputs: tuple[torch.Tensor, torch.Tensor]) -> float:
    """Share of strings whose whole answer (and '.') is the argmax at every step."""
    x, y = inputs
    logits, _ = net(x)                                                    # (B, T, V)
    return float(((logits.argmax(-1) == y) | (y == -1)).all(dim=1).float().mean())


def chance(n_eval: int) -> float:
    """Exact match of a blind guess: a uniform symbol at each of the answer's len + 1 positions (digits and '.')."""
    from data.sorting import VOCAB

    return float(sum(len(VOCAB) ** -(len(s) + 1) for s in held_out(n_eval)) / n_eval) if n_eval else 0.0


def task(n_score: int, n_eval: int, size: int = 16, device: str = "cpu") -> tuple[list, tuple | None]:
    """(batches that score importance, one held-out batch that measures exact match or None)."""
    score = strings(n_score, SCORE_SEED)
    batches = [encode(score[i:i + size], device) for i in range(0, n_score, size)]
    return batches, encode(held_out(n_eval), device) if n_eval else None


def held_out_metric(net, n_eval: int, device: str = "cpu"):
    """metric(plan) -> exact match on n_eval held-out strings with plan's heads gated to 0."""
    held = task(0, n_eval, device=device)[1]
    return gated_metric(net, lambda m: exact_match(m, held))


def score_heads(tiny, n_score: int, n_strings: int = 24, progress=None) -> tuple:
    """For models.tiny's Tiny: gradient importance [L, H] from n_score strings, confidence [L, H] and
    pattern labels from the attention over the first n_strings scoring strings."""
    grads = gradient_importance(tiny.net, loss, task(n_score, 0, device=tiny.device)[0], progress=progress)
    traces = [tiny.attend(s) for s in strings(n_strings, SCORE_SEED)]
    weights, tokens = [t.weights for t in traces], [t.tokens for t in traces]
    return grads, confidence(weights), patterns.labels(patterns.head_stats(weights, tokens))

"""Logits to next-token probabilities: temperature, then top-k, then top-p (nucleus), then softmax.

The same three steps, in the same order and with the same tie rules, as transformers' TemperatureLogitsWarper ->
TopKLogitsWarper -> TopPLogitsWarper (min_tokens_to_keep=1), so a probability shown here is the one `generate`
samples from. Meanings the warpers leave undefined are fixed here, each in one place:

    temperature 0      greedy: all the probability on the top logit (the first one on a tie)
    top_k None or 0    no top-k filter; top_k above the vocabulary keeps every token
    top_p None or 1    no top-p filter; top_p 0 keeps only the most likely token (the warper keeps one at least)

It samples nothing (experiments.next_token draws from these probabilities) and knows nothing of models.

    next_token_probs(np.array([2.0, 1.0, 0.0]), top_k=2)   # -> [0.731, 0.269, 0.0]
"""
from __future__ import annotations

import numpy as np
import torch

from limits.errors import UserError


def check(temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None) -> None:
    """ValueError with one sentence when a setting has no meaning (negative temperature, top-p outside [0, 1])."""
    if not np.isfinite(temperature) or temperature < 0:
        raise UserError(f"Temperature must be 0 (greedy) or more, not {temperature}.")
    if top_k is not None and top_k < 0:
        raise UserError(f"Top-k must be a whole number of tokens, 0 meaning off, not {top_k}.")
    if top_p is not None and not 0 <= top_p <= 1:
        raise UserError(f"Top-p is a share of the probability between 0 and 1, not {top_p}.")


def filtered_logits(logits, temperature: float = 1.0, top_k: int | None = None,
                    top_p: float | None = None) -> torch.Tensor:
    """Logits [V] after temperature, top-k and top-p, float32; a token filtered out gets -inf."""
    check(temperature, top_k, top_p)
    scores = torch.from_numpy(np.array(logits, dtype=np.float32)).reshape(1, -1)  # (1, V), a copy
    if temperature == 0:  # greedy: the one top token stays
        keep = scores.argmax(dim=-1, keepdim=True)  # (1, 1)
        return torch.full_like(scores, -float("inf")).scatter(1, keep, scores.gather(1, keep))[0]
    scores = scores / temperature
    if top_k:
        k = min(int(top_k), scores.shape[-1])
        kth = torch.topk(scores, k)[0][..., -1, None]  # (1, 1): ties with the k-th value stay, as in the warper
        scores = scores.masked_fill(scores < kth, -float("inf"))
    if top_p is not None and top_p < 1:
        ordered, order = torch.sort(scores, descending=False)  # (1, V) ascending, as the warper sorts
        cumulative = ordered.softmax(dim=-1).cumsum(dim=-1)    # (1, V)
        drop = cumulative <= (1 - top_p)
        drop[..., -1:] = False  # the most likely token always stays
        scores = scores.masked_fill(drop.scatter(1, order, drop), -float("inf"))
    return scores[0]  # (V,)


def next_token_probs(logits, temperature: float = 1.0, top_k: int | None = None,
                     top_p: float | None = None) -> np.ndarray:
    """Probabilities [V] (float64, sum 1) of the next token after temperature -> top-k -> top-p -> softmax."""
    return filtered_logits(logits, temperature, top_k, top_p).softmax(dim=-1).double().numpy()

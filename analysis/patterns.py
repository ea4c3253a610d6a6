"""Head pattern labels after Clark et al. 2019 ("What does BERT look at?"), from simple statistics.

For each head, averaged over sentences and query tokens: the weight on the previous token, on the
next token, on [CLS], on [SEP], on punctuation, and the row entropy divided by log(#keys) (1 =
uniform). A head is labelled by the target holding at least half of its attention on average,
else "broad" when its normalised entropy is at least 0.75, else "mixed".
Does not probe syntax (Clark's dependency heads) and does not run a model: it takes weights.
"""
from __future__ import annotations

import string
from collections.abc import Sequence

import numpy as np

from analysis.inside_head import row_entropy

TARGETS = ("previous token", "next token", "[CLS]", "[SEP]", "punctuation")
CLS_TOKENS = {"[CLS]", "<s>"}
SEP_TOKENS = {"[SEP]", "</s>"}
SHARE, BROAD = 0.5, 0.75


def _is_punct(token: str) -> bool:
    t = token.lstrip("#").lstrip("Ġ▁")
    return bool(t) and all(c in string.punctuation for c in t)


def sentence_stats(weights: np.ndarray, tokens: list[str]) -> np.ndarray:
    """Per-head shares for one sentence: [L, H, T, T] -> [L, H, 6] (TARGETS..., normalised entropy)."""
    n = len(tokens)
    i = np.arange(n)
    prev = weights[..., i[1:], i[1:] - 1].mean(-1) if n > 1 else np.zeros(weights.shape[:2])  # (L, H)
    nxt = weights[..., i[:-1], i[:-1] + 1].mean(-1) if n > 1 else np.zeros(weights.shape[:2])
    cols = [np.array([t in CLS_TOKENS for t in tokens]), np.array([t in SEP_TOKENS for t in tokens]),
            np.array([_is_punct(t) for t in tokens])]
    shares = [weights[..., c].sum(-1).mean(-1) for c in cols]                                   # (L, H) each
    ent = row_entropy(weights).mean(-1) / np.log(max(n, 2))
    return np.stack([prev, nxt, *shares, ent], axis=-1)                                         # (L, H, 6)


def head_stats(attentions: Sequence[np.ndarray], tokens: Sequence[list[str]]) -> np.ndarray:
    """Mean of sentence_stats over sentences: [L, H, 6]."""
    return np.mean([sentence_stats(w, t) for w, t in zip(attentions, tokens)], axis=0)


def labels(stats: np.ndarray) -> list[list[str]]:
    """[L, H, 6] -> label per head, e.g. [['[CLS]', 'broad', ...], ...]."""
    out = []
    for layer in stats:
        row = []
        for s in layer:
            best = int(np.argmax(s[:5]))
            row.append(TARGETS[best] if s[best] >= SHARE else "broad" if s[5] >= BROAD else "mixed")
        out.append(row)
    return out

"""Head behaviours after Clark et al. 2019 ("What does BERT look at?"), from simple statistics.

For each head of one sentence, averaged over its query tokens (FEATURES, in this order): the weight on
the previous token, on the next token, on [CLS] (or a BOS token), on [SEP] (or EOS), on punctuation;
the row entropy divided by log(#keys) (1 = uniform); the weight on the query itself ("self"); the
weight on other positions holding the same token ("same token", averaged over the queries whose
token occurs again, NaN when none does); and the mean distance |i - j| in tokens, weighted by
attention. A head is labelled by the target holding at least half of its attention on average,
else "broad" when its normalised entropy is at least 0.75, else "mixed".
Does not probe syntax (Clark's dependency heads) and does not run a model: it takes weights.
"""
from __future__ import annotations

import string
from collections.abc import Sequence

import numpy as np

from analysis.inside_head import row_entropy

TARGETS = ("previous token", "next token", "[CLS]", "[SEP]", "punctuation")
FEATURES = TARGETS + ("entropy", "self", "same token", "distance")
CLS_TOKENS = {"[CLS]", "<s>", "<bos>", "<BOS>", "<|endoftext|>", "<|begin_of_text|>"}
SEP_TOKENS = {"[SEP]", "</s>", "<eos>", "<EOS>", "<|end_of_text|>"}
LABELS = TARGETS + ("broad", "mixed")
SHARE, BROAD = 0.5, 0.75


def _is_punct(token: str) -> bool:
    t = token.lstrip("#").lstrip("Ġ▁")
    return bool(t) and all(c in string.punctuation for c in t)


def sentence_stats(weights: np.ndarray, tokens: list[str]) -> np.ndarray:
    """Per-head behaviours of one sentence: weights [L, H, T, T] -> [L, H, len(FEATURES)] (see FEATURES)."""
    n = len(tokens)
    i = np.arange(n)
    prev = weights[..., i[1:], i[1:] - 1].mean(-1) if n > 1 else np.zeros(weights.shape[:2])  # (L, H)
    nxt = weights[..., i[:-1], i[:-1] + 1].mean(-1) if n > 1 else np.zeros(weights.shape[:2])
    cols = [np.array([t in CLS_TOKENS for t in tokens]), np.array([t in SEP_TOKENS for t in tokens]),
            np.array([_is_punct(t) for t in tokens])]
    shares = [weights[..., c].sum(-1).mean(-1) for c in cols]                                   # (L, H) each
    ent = row_entropy(weights).mean(-1) / np.log(max(n, 2))                                     # (L, H)
    own = weights[..., i, i].mean(-1)                                                           # (L, H)
    toks = np.array(tokens, dtype=object)
    same = (toks[:, None] == toks[None, :]) & ~np.eye(n, dtype=bool)                          # (T, T)
    repeated = same.any(-1)                                                                     # (T,) queries
    if repeated.any():
        twin = (weights * same).sum(-1)[..., repeated].mean(-1)                                # (L, H)
    else:
        twin = np.full(weights.shape[:2], np.nan)
    dist = (weights * np.abs(i[:, None] - i[None, :])).sum(-1).mean(-1)                       # (L, H)
    return np.stack([prev, nxt, *shares, ent, own, twin, dist], axis=-1)                       # (L, H, F)


def head_stats(attentions: Sequence[np.ndarray], tokens: Sequence[list[str]]) -> np.ndarray:
    """Mean of sentence_stats over sentences, each feature over the sentences where it is defined: [L, H, F]."""
    per = np.stack([sentence_stats(w, t) for w, t in zip(attentions, tokens)])               # (N, L, H, F)
    defined = ~np.isnan(per)
    total = np.where(defined, per, 0).sum(0)
    count = defined.sum(0)
    return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def label_index(stats: np.ndarray) -> np.ndarray:
    """[..., F] -> [...] int: the index in LABELS of each head's label (vectorised label())."""
    targets = stats[..., :len(TARGETS)]
    best = targets.argmax(-1)
    share = np.take_along_axis(targets, best[..., None], -1)[..., 0]
    entropy = stats[..., FEATURES.index("entropy")]
    return np.where(share >= SHARE, best, np.where(entropy >= BROAD, len(TARGETS), len(TARGETS) + 1))


def label(s: np.ndarray) -> str:
    """One head's label from its FEATURES vector: [.9, 0, 0, 0, 0, .1, ...] -> 'previous token'."""
    return LABELS[int(label_index(np.asarray(s)))]


def labels(stats: np.ndarray) -> list[list[str]]:
    """[L, H, F] -> label per head, e.g. [['[CLS]', 'broad', ...], ...]."""
    return [[LABELS[i] for i in layer] for layer in label_index(stats).tolist()]

"""Minimal pairs: which tokens of two sentences correspond, and how their attention differs per head.

Pure numpy on two traces' weights from the same model. Tokens are aligned by their strings in order
(difflib's longest matching blocks), so "bank" in "I sat on the river bank" pairs with "bank" in
"I paid at the bank". Does not align by meaning or by characters inside a token.
"""
from __future__ import annotations

from difflib import SequenceMatcher

import numpy as np


def align(tokens_a: list[str], tokens_b: list[str]) -> list[tuple[int, int]]:
    """Positions of equal tokens, in order. ['i','sat','the','bank'], ['i','paid','the','bank'] -> [(0,0),(2,2),(3,3)]
    """
    blocks = SequenceMatcher(a=tokens_a, b=tokens_b, autojunk=False).get_matching_blocks()
    return [(blk.a + k, blk.b + k) for blk in blocks for k in range(blk.size)]


def ident(tokens: list[str], i: int) -> str:
    """A token named by its text and which occurrence it is: ['the', 'cat', 'the'], 2 -> 'the #2'; 1 -> 'cat'"""
    n = tokens[:i].count(tokens[i])
    return tokens[i] if n == 0 else f"{tokens[i]} #{n + 1}"


def summed(weights: np.ndarray, rows: list[int]) -> np.ndarray:
    """Attention the chosen query tokens pay to every key, summed: [L, H, Tq, Tk] -> [L, H, Tk]."""
    return weights[:, :, rows, :].sum(axis=2)  # (L, H, Tk)


def aligned_difference(weights_a: np.ndarray, weights_b: np.ndarray, query_pairs: list[tuple[int, int]],
                       key_pairs: list[tuple[int, int]]) -> np.ndarray:
    """B minus A: summed attention of the paired queries to each paired key. -> [L, H, len(key_pairs)]"""
    qa, qb = [a for a, _ in query_pairs], [b for _, b in query_pairs]
    ka, kb = [a for a, _ in key_pairs], [b for _, b in key_pairs]
    return summed(weights_b, qb)[:, :, kb] - summed(weights_a, qa)[:, :, ka]  # (L, H, P)


def per_head(difference: np.ndarray, n_queries: int) -> np.ndarray:
    """One number per head: half the L1 size of the difference per chosen query, in 0..1. [L, H, P] -> [L, H]"""
    return 0.5 * np.abs(difference).sum(axis=-1) / max(n_queries, 1)

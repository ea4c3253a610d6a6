"""Minimal pairs: which words of two sentences correspond, and how their attention differs per head.

Pure numpy on two traces' weights from the same model. Words are found by analysis.patterns.word_spans (a
word cut into pieces by the tokenizer, 'Ġb' 'an' 'k', is one word, 'bank') and aligned by their text in order
(difflib's longest matching blocks), so "bank" in "I sat on the river bank" pairs with "bank" in "I paid at the
bank". A word's query rows are averaged over its pieces (one distribution per word, summing to 1), and the
attention a key word gets is summed over its pieces. Does not align by meaning or by characters inside a word.
"""
from __future__ import annotations

from collections.abc import Sequence
from difflib import SequenceMatcher

import numpy as np

from analysis.patterns import word_spans

Word = int | Sequence[int]  # a token position, or a word's token positions


def align(tokens_a: list[str], tokens_b: list[str]) -> list[tuple[int, int]]:
    """Positions of equal tokens, in order. ['i','sat','the','bank'], ['i','paid','the','bank'] -> [(0,0),(2,2),(3,3)]
    """
    blocks = SequenceMatcher(a=tokens_a, b=tokens_b, autojunk=False).get_matching_blocks()
    return [(blk.a + k, blk.b + k) for blk in blocks for k in range(blk.size)]


def align_words(tokens_a: list[str], tokens_b: list[str]) -> list[tuple[str, list[int], list[int]]]:
    """Words both sentences hold, in order: (text, its token positions in A, in B).

    ['<s>', 'I', 'Ġsat', 'Ġb', 'an', 'k'], ['<s>', 'I', 'Ġpaid', 'Ġb', 'an', 'k']
    -> [('<s>', [0], [0]), ('I', [1], [1]), ('bank', [3, 4, 5], [3, 4, 5])]
    """
    wa, wb = word_spans(tokens_a), word_spans(tokens_b)
    return [(wa[a][0], wa[a][1], wb[b][1]) for a, b in align([t for t, _ in wa], [t for t, _ in wb])]


def ident(tokens: list[str], i: int) -> str:
    """A token named by its text and which occurrence it is: ['the', 'cat', 'the'], 2 -> 'the #2'; 1 -> 'cat'"""
    n = tokens[:i].count(tokens[i])
    return tokens[i] if n == 0 else f"{tokens[i]} #{n + 1}"


def _positions(word: Word) -> list[int]:
    return [int(word)] if isinstance(word, (int, np.integer)) else list(word)


def summed(weights: np.ndarray, rows: Sequence[Word]) -> np.ndarray:
    """Attention the chosen words pay to every key token: each word's rows averaged over its pieces, then the
    words added. [L, H, Tq, Tk] -> [L, H, Tk]; with one-token words, the rows summed."""
    return sum(weights[:, :, _positions(w), :].mean(axis=2) for w in rows)  # (L, H, Tk)


def aligned_difference(weights_a: np.ndarray, weights_b: np.ndarray, query_pairs: Sequence[tuple[Word, Word]],
                       key_pairs: Sequence[tuple[Word, Word]]) -> np.ndarray:
    """B minus A: the paired query words' attention to each paired key word (summed over its pieces).
    -> [L, H, len(key_pairs)]"""
    ra, rb = summed(weights_a, [a for a, _ in query_pairs]), summed(weights_b, [b for _, b in query_pairs])
    to_a = np.stack([ra[..., _positions(a)].sum(-1) for a, _ in key_pairs], axis=-1)  # (L, H, P)
    to_b = np.stack([rb[..., _positions(b)].sum(-1) for _, b in key_pairs], axis=-1)  # (L, H, P)
    return to_b - to_a


def per_head(difference: np.ndarray, n_queries: int) -> np.ndarray:
    """One number per head: half the L1 size of the difference per chosen query, in 0..1. [L, H, P] -> [L, H]"""
    return 0.5 * np.abs(difference).sum(axis=-1) / max(n_queries, 1)

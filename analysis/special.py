"""Hide special tokens ([CLS], [SEP], ...) from attention and renormalise what remains.

Only re-weights rows over the kept keys; it never changes the model's computation.
"""
from __future__ import annotations

import numpy as np

SPECIAL_TOKENS = frozenset({"[CLS]", "[SEP]", "[PAD]", "<s>", "</s>", "<pad>", "<bos>", "<eos>"})


def hide_special(weights: np.ndarray, tokens: list[str], key_tokens: list[str],
                 special: frozenset[str] = SPECIAL_TOKENS) -> tuple[np.ndarray, list[str], list[str]]:
    """Drop special query rows and key columns, rows renormalised to 1 (rows with nothing left stay 0).

    [..., Tq, Tk] -> [..., Tq', Tk']; e.g. tokens [CLS] a b [SEP] -> a b.
    """
    q = [i for i, t in enumerate(tokens) if t not in special]
    k = [j for j, t in enumerate(key_tokens) if t not in special]
    w = weights[..., q, :][..., k].astype(np.float64)
    total = w.sum(axis=-1, keepdims=True)
    w = np.divide(w, total, out=np.zeros_like(w), where=total > 0)
    return w.astype(np.float32), [tokens[i] for i in q], [key_tokens[j] for j in k]

"""Special tokens: which a sequence holds ([CLS], [SEP], <s>, ...), and hiding them from attention.

`present` names the special tokens of a sequence, so a view offers to hide them (or to rank heads by them)
only when the model put some there. `hide_special` only re-weights rows over the kept keys; it never changes
the model's computation.
"""
from __future__ import annotations

import numpy as np

START_TOKENS = frozenset({"[CLS]", "<s>", "<bos>", "<BOS>", "<|endoftext|>", "<|begin_of_text|>"})  # or BOS
END_TOKENS = frozenset({"[SEP]", "</s>", "<eos>", "<EOS>", "<|end_of_text|>"})                      # or EOS
SPECIAL_TOKENS = START_TOKENS | END_TOKENS | {"[PAD]", "<pad>"}


def present(*sequences: list[str], special: frozenset[str] = SPECIAL_TOKENS) -> list[str]:
    """The special tokens the sequences hold, in order of first appearance, each once.

    ['[CLS]', 'a', '[SEP]', 'b', '[SEP]'] -> ['[CLS]', '[SEP]'];  ['<s>', 'The', 'Ġcat'] -> ['<s>'];  ['a'] -> []
    """
    return [t for t in dict.fromkeys(t for seq in sequences for t in seq) if t in special]


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

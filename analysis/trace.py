"""AttentionTrace: what every model returns from attend(); the one contract the views read.

It holds attention weights and the tokens they are over. It does not hold hidden states,
logits or anything view-specific: views that need more ask the model for it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

KINDS = ("self", "causal", "cross")


@dataclass(frozen=True)
class AttentionTrace:
    tokens: list[str]         # query-side tokens, as the model's tokenizer wrote them
    key_tokens: list[str]     # key-side tokens (== tokens for self-attention)
    weights: np.ndarray       # float32 [layers, heads, len(tokens), len(key_tokens)]; rows sum to 1
    kind: str                 # "self", "causal" or "cross"
    output: str | None = None           # generated text (seq2seq, tiny decoder), else None
    notices: tuple[str, ...] = ()       # what the user should know, e.g. truncation

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, not {self.kind!r}")
        w = self.weights
        if w.ndim != 4 or w.shape[2:] != (len(self.tokens), len(self.key_tokens)):
            raise ValueError(
                f"weights {w.shape} do not match {len(self.tokens)} x {len(self.key_tokens)} tokens"
            )
        if w.dtype != np.float32:
            object.__setattr__(self, "weights", w.astype(np.float32))

    @property
    def n_layers(self) -> int:
        return self.weights.shape[0]

    @property
    def n_heads(self) -> int:
        return self.weights.shape[1]

"""AttentionTrace: what every model returns from attend(); the one contract the views read.

It holds attention weights and the tokens they are over. It does not hold hidden states,
logits or anything view-specific: views that need more ask the model for it. A model with more than
one stack returns its main attention with the others in `parts`: an encoder-decoder's trace is its
cross-attention, with parts["encoder"] (self) and parts["decoder"] (causal).
"""
from __future__ import annotations

from dataclasses import dataclass, field

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
    parts: dict[str, AttentionTrace] = field(default_factory=dict)  # the model's other stacks, by name

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, not {self.kind!r}")
        w = self.weights
        if w.ndim != 4 or w.shape[2:] != (len(self.tokens), len(self.key_tokens)):
            raise ValueError(
                f"weights {w.shape} do not match {len(self.tokens)} x {len(self.key_tokens)} tokens"
            )
        if any(not isinstance(p, AttentionTrace) for p in self.parts.values()):
            raise ValueError("parts must map names to AttentionTrace")
        if w.dtype != np.float32:
            object.__setattr__(self, "weights", w.astype(np.float32))

    @property
    def n_layers(self) -> int:
        return self.weights.shape[0]

    @property
    def n_heads(self) -> int:
        return self.weights.shape[1]

    def stacks(self) -> dict[str, AttentionTrace]:
        """Every stack by name, this one first under its kind: {"cross": self, "encoder": ..., "decoder": ...}"""
        return {self.kind: self, **self.parts}

"""AttentionTrace: what every model returns from attend(); the one contract the views read. HeadQKV: one head's
input, queries, keys and values, what a model's head_qkv() returns for the views that step through a head.

It holds attention weights and the tokens they are over. It does not hold hidden states,
logits or anything view-specific: views that need more ask the model for it. A model with more than
one stack returns its main attention with the others in `parts`: an encoder-decoder's trace is its
cross-attention, with parts["encoder"] (self) and parts["decoder"] (causal).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is not imported here: the app's first page imports this module and draws no array
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
        if w.dtype != "float32":
            object.__setattr__(self, "weights", w.astype("float32"))

    @property
    def n_layers(self) -> int:
        return self.weights.shape[0]

    @property
    def n_heads(self) -> int:
        return self.weights.shape[1]

    def stacks(self) -> dict[str, AttentionTrace]:
        """Every stack by name, this one first under its kind: {"cross": self, "encoder": ..., "decoder": ...}"""
        return {self.kind: self, **self.parts}


@dataclass(frozen=True)
class HeadQKV:
    """One head of one layer as the model computed it: what Inside a head and the tiled step-through read.

    softmax(q kᵀ / √hs, masked when causal) is the head's attention; model_weights, when the model gives them,
    are the model's own weights for that head, so a caller can check the recompute against them. It holds
    numpy arrays, not tensors, and nothing of the other heads.

        d = models.load("tiny").head_qkv("31415", layer=1, head=2)
        d.q.shape   # (T, hs)
    """
    tokens: list[str]         # the T tokens, as the model's tokenizer wrote them
    x: np.ndarray             # (T, C) the layer's input as the head reads it (after the block's norm, if any)
    q: np.ndarray             # (T, hs) this head's queries (RoPE applied where the model rotates them)
    k: np.ndarray             # (T, hs) the keys this head reads (its key/value head's, in GQA)
    v: np.ndarray             # (T, hs) the values this head reads
    scale: bool | float = True  # True: scores ÷ √hs; False: not scaled; a float: the model's own factor (Gemma's
                                # 1/√query_pre_attn_scalar, YaRN's attention factor over √hs)
    causal: bool = False      # each query sees only keys at or before it
    model_weights: np.ndarray | None = None   # (T, T) [query_pos, key_pos] the model's own weights, when it gives them
    kv_head: int | None = None  # the key/value head this query head reads (GQA decoders), else None
    rope: bool = False        # q and k are rotated by position (RoPE)
    qk_norm: bool = False     # q and k are normed before RoPE (Qwen3's and Gemma 3's per head, OLMo 2's whole)
    window: int | None = None  # a sliding window of this many keys (itself included), on a causal head

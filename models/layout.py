"""Which layout a loaded model's architecture has: the one place that reads a config's `model_type`.

The code that recomputes a head's queries and keys, splits the residual stream or traces a circuit is written
per layout, not per model name: a BERT layout (encoder.layer[i].attention.self.query/key/value: BERT, RoBERTa,
ELECTRA), a Llama layout (separate q/k/v/o projections and RoPE in every layer: Llama, Mistral, Qwen2), GPT-2
(one fused c_attn, learned positions) and GPT-NeoX (fused query_key_value, partial rotary, parallel residual).
Everything outside models/ asks these questions of a model instead of comparing its name (a test keeps it so).
A pruned export ("pruned-llama") has its original's layout.

What it does not do: decide what a view can show (models.architectures) or load anything.

    of(load("gpt"))              -> 'llama'       (the built-in gpt is a Llama)
    of(load("bert"))             -> 'bert'
    rotary(load("hf:<a Qwen2>")) -> True
"""
from __future__ import annotations

LLAMA = ("llama", "mistral", "qwen2")   # q/k/v/o projections, RoPE in every layer, RMSNorm
BERT = ("bert", "roberta", "electra")   # encoder.layer[i].attention.self.query/key/value
ROTARY = LLAMA + ("gpt_neox",)          # positions rotate Q and K inside each head instead of being added


def model_type(model) -> str:
    """The architecture of a loaded Hugging Face model ('' for the built-ins written here), pruned or not:
    'llama' for 'llama' and for its pruned export 'pruned-llama'."""
    cfg = getattr(model, "config", None)
    if cfg is None:
        cfg = getattr(getattr(model, "model", None), "config", None)
    return (getattr(cfg, "model_type", None) or "").removeprefix("pruned-")


def of(model) -> str | None:
    """The model's layout: 'bert', 'llama', 'gpt2', 'gpt_neox', or None for any other (or a built-in)."""
    kind = model_type(model)
    if kind in BERT:
        return "bert"
    if kind in LLAMA:
        return "llama"
    return kind if kind in ("gpt2", "gpt_neox") else None


def rotary(model) -> bool:
    """Whether positions enter through a rotation of Q and K (RoPE) rather than a vector added to the embedding."""
    return model_type(model) in ROTARY


def name(model) -> str:
    """The architecture's name for a sentence shown to the user ('opt'), or '' for a built-in."""
    return model_type(model)


def bert(model) -> bool:
    """BERT's layout (encoder.layer[i].attention.self.query/key/value), which gates, pruning and Q/K recompute read."""
    return of(model) == "bert"


def llama(model) -> bool:
    """The Llama layout (q/k/v/o projections, RoPE in every layer), pruned or not."""
    return of(model) == "llama"


def gpt2(model) -> bool:
    """GPT-2's layout (one fused c_attn, learned positions)."""
    return of(model) == "gpt2"

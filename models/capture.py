"""One attention capture for every family that routes its attention through transformers' registry.

transformers 5 calls `ALL_ATTENTION_FUNCTIONS.get_interface(config._attn_implementation, eager_attention_forward)`
in most attention modules (Llama, Mistral, Qwen2/3, Gemma 1-3, Phi-3, OPT, GPT-2, GPT-NeoX, BERT, XLM-R, T5,
BART, mBART, Pegasus, ViT, ...). This module registers one implementation under NAME (with transformers' eager
mask) that calls the calling family's own `eager_attention_forward` (so its mask, sliding window, softcapping and
sinks are exactly that family's eager math) and, while `recording()` is open in the calling context, keeps what
each call saw and made:

    install(model)                       # True: the model's attention now goes through NAME (eager math), and
                                         # output_hidden_states ends with the residual before the final norm
    with recording(model) as calls:      # per call: a ContextVar, never state on the shared model
        model(**enc)
    calls[0].weights                     # (B, H, Tq, Tk), equal to eager output_attentions[0]

Outside `recording()` the implementation only computes eager attention. It does not change what a model
computes, does not batch or cache, and does not reach families that bypass the registry (Falcon, GPT-J, BLOOM,
DeBERTa-v2 in 5.23): install() returns False for them and they keep giving weights through output_attentions.
"""
from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import torch

NAME = "attention_explorer"  # the attn_implementation a captured model's config names

# the open record of this context: (module id -> its dotted name, the calls so far); None when not recording
_RECORD: ContextVar[tuple[dict[int, str], list[Call]] | None] = ContextVar("attention_capture", default=None)


@dataclass(frozen=True)
class Call:
    """One attention call of one module, detached. Keys and values are as the model passed them: after RoPE and
    q/k norms, before key/value heads are repeated for grouped queries (kv_heads <= heads)."""

    module: str            # the attention module's dotted name in the model, e.g. "model.layers.0.self_attn"
    query: torch.Tensor    # (B, H, Tq, d)
    key: torch.Tensor      # (B, kv_heads, Tk, d)
    value: torch.Tensor    # (B, kv_heads, Tk, d_v)
    weights: torch.Tensor  # (B, H, Tq, Tk): after mask, window, softcap and sinks; rows sum to 1 (less with sinks)
    output: torch.Tensor   # (B, H, Tq, d_v): each head's output before the output projection
    scaling: float | None = None  # what the scores q kᵀ were multiplied by (None: the family's default, 1/√d)

    @property
    def cross(self) -> bool:
        """A decoder's attention over encoder states (BART/mBART/Pegasus encoder_attn, BERT crossattention,
        T5 EncDecAttention)."""
        return any(part in self.module for part in ("encoder_attn", "crossattention", "EncDecAttention"))


def _eager_of(module: torch.nn.Module):
    """The calling family's own eager function (its modeling file's eager_attention_forward), else None."""
    return getattr(sys.modules.get(type(module).__module__), "eager_attention_forward", None)


def _generic_eager(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """Plain eager attention for a family whose modeling file names no eager function of its own."""
    groups = query.shape[1] // key.shape[1]
    key = key.repeat_interleave(groups, dim=1)        # (B, H, Tk, d), repeat_kv's order
    value = value.repeat_interleave(groups, dim=1)    # (B, H, Tk, d_v)
    scaling = query.shape[-1] ** -0.5 if scaling is None else scaling
    scores = torch.matmul(query, key.transpose(2, 3)) * scaling  # (B, H, Tq, Tk)
    if attention_mask is not None:
        scores = scores + attention_mask[..., : key.shape[-2]]
    weights = torch.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    weights = torch.nn.functional.dropout(weights, p=dropout, training=module.training)
    return torch.matmul(weights, value).transpose(1, 2).contiguous(), weights  # (B, Tq, H, d_v), (B, H, Tq, Tk)


def attention(module, query, key, value, attention_mask, **kwargs):
    """The registered implementation: the family's eager attention, recorded when recording() is open here.
    query (B, H, Tq, d), key and value (B, kv_heads, Tk, d) -> (output (B, Tq, H, d_v), weights (B, H, Tq, Tk))."""
    eager = _eager_of(module) or _generic_eager
    out, weights = eager(module, query, key, value, attention_mask, **kwargs)
    record = _RECORD.get()
    if record is not None:
        names, calls = record
        calls.append(Call(names.get(id(module), type(module).__name__), query.detach(), key.detach(),
                          value.detach(), weights.detach(), out.detach().transpose(1, 2),  # (B, H, Tq, d_v)
                          kwargs.get("scaling")))
    return out, weights


def register() -> None:
    """Register NAME with transformers' attention and mask interfaces (eager masks); idempotent."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register(NAME, attention)
    AttentionMaskInterface.register(NAME, eager_mask)


def routes_through_registry(model: torch.nn.Module) -> bool:
    """True when the model's attention modules ask transformers' registry for their implementation (read from
    their modeling files: Falcon, GPT-J, BLOOM and DeBERTa-v2 do not, in 5.23)."""
    mods = {type(m).__module__ for m in model.modules() if type(m).__module__.startswith("transformers.models.")}
    return any(hasattr(sys.modules.get(name), "ALL_ATTENTION_FUNCTIONS") for name in mods)


def install(model: torch.nn.Module) -> bool:
    """Route the model's attention through NAME when its family uses the registry; False (model untouched, still
    eager) when it does not. Call once after loading, before the model is shared."""
    if not routes_through_registry(model):
        return False
    register()
    model.set_attn_implementation(NAME)
    # the residual stream itself: hidden_states[-1] is the last layer's output before the final norm (transformers
    # would put the final norm's output there, which last_hidden_state and the logits already carry)
    model.config.tie_last_hidden_states = False
    return True


def installed(model: torch.nn.Module) -> bool:
    return getattr(model.config, "_attn_implementation", None) == NAME


@contextmanager
def recording(model: torch.nn.Module) -> Iterator[list[Call]]:
    """The calls made in this context while open, in call order (a ContextVar: other threads and contexts
    calling the same model record their own). Nested recordings are refused."""
    if _RECORD.get() is not None:
        raise RuntimeError("recording() is already open in this context: close it before opening another.")
    calls: list[Call] = []
    token = _RECORD.set(({id(m): name for name, m in model.named_modules()}, calls))
    try:
        yield calls
    finally:
        _RECORD.reset(token)


def self_weights(calls: list[Call]) -> list[torch.Tensor]:
    """Each layer's self-attention weights (B, H, T, T), in call order (cross-attention calls left out)."""
    return [c.weights for c in calls if not c.cross]

"""A transformers causal LM writing text: its prompt (the text as its tokenizer frames it, less the end mark after
it), transformers' own cache behind models.kv_cache's measuring interface (HFCache), and its tokens one by one
through models.generate.stream (lm_steps). Shared by every loaded model that writes: models.hf.decoders.Decoder and a
BERT-style causal LM (models.hf.encoders.Encoder.writes). It loads nothing and holds no model. A class whose forward
takes no past_key_values (GPT-1's OpenAIGPTLMHeadModel, XLNet's, XLM's: takes_cache) writes without a cache, each
step reading the whole text again: it would swallow the cache unread and compute each new token without the text.
"""
from __future__ import annotations

import inspect

import torch

from limits.errors import UserError
from models.generate import stream
from models.hf.common import check_text


class HFCache:
    """transformers' own cache of a model behind the measuring interface of models.kv_cache.KVCache: seq_len,
    nbytes, bytes_per_layer, keys and values (B, kv_heads, T, head_dim) per layer. Memory is measured from
    the tensors the cache holds. `inner` is what the model reads and writes: the cache the model makes itself on its
    first step (a DynamicCache, or a class of its own: MiniMax's), then handed back to it each step. A hybrid's layers
    without attention (Jamba's mamba, Qwen3-Next's linear attention) keep a state of their own instead of keys and
    values: they are left out of the layers here, and state_bytes() measures their states."""

    def __init__(self, capacity: int | None = None) -> None:
        self.inner = None  # the model's own, from its first step on
        self.capacity = capacity  # transformers' caches grow by concatenation; kept for KVCache's signature only

    @property
    def _attending(self) -> list:
        """The cache's layers that hold keys and values (DynamicLayer and its kinds: sliding, indexed, beside a state),
        not a hybrid's state-only layers, the placeholders of its layers without a token mixer (Nemotron-H's) or
        those a cache of its own keeps for the layers that do not attend (MiniMax's, never filled)."""
        from transformers.cache_utils import DynamicLayer

        return [layer for layer in self.inner.layers if isinstance(layer, DynamicLayer) and layer.is_initialized]

    @property
    def keys(self) -> list[torch.Tensor | None]:
        return [layer.keys if layer.is_initialized else None for layer in self._attending]

    @property
    def values(self) -> list[torch.Tensor | None]:
        return [layer.values if layer.is_initialized else None for layer in self._attending]

    @property
    def n_layers(self) -> int:
        return len(self._attending)

    def seq_len(self, layer: int = 0) -> int:
        return int(self._attending[layer].get_seq_length())

    def bytes_per_layer(self) -> list[int]:
        return [0 if k is None else k.element_size() * k.numel() + v.element_size() * v.numel()
                for k, v in zip(self.keys, self.values)]

    def nbytes(self) -> int:
        return sum(self.bytes_per_layer())

    def state_bytes(self) -> int:
        """Bytes of the states a hybrid's layers without attention keep (convolution and recurrent states; MiniMax's
        linear_cache), 0 for a model whose every layer attends: the same after every token, whatever the length."""
        states = [t for layer in self.inner.layers for kept in ("conv_states", "recurrent_states")
                  for t in (getattr(layer, kept, None) or {}).values() if t is not None]
        states += [t for t in getattr(self.inner, "linear_cache", ()) if isinstance(t, torch.Tensor)]
        return sum(t.element_size() * t.numel() for t in states)


def prompt_ids(tokenizer, text: str) -> list[int]:
    """The tokenizer's ids of `text` up to its last text token: '<s> T h e </s>' -> '<s> T h e'. A tokenizer whose
    specials do not wrap the plain ids unchanged keeps all its ids."""
    ids = tokenizer(text, verbose=False)["input_ids"]
    plain = tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"]
    n = len(plain)
    for start in range(len(ids) - n + 1):
        if n and ids[start:start + n] == plain:
            return ids[:start + n]
    return ids


def prompt_tensor(tokenizer, text: str, max_tokens: int, device, room: int = 0) -> tuple[torch.Tensor, tuple[str, ...]]:
    """A causal LM's prompt ids (1, T) (prompt_ids), cut to leave `room` positions of `max_tokens` for written tokens,
    with a notice when cut; UserError for a text of no tokens or no room."""
    ids = prompt_ids(tokenizer, check_text(text))
    if not ids:
        raise UserError("The tokenizer made no tokens of this text: type some words.")
    keep = max_tokens - room
    if keep < 1:
        raise UserError(f"This model holds {max_tokens} positions: ask for fewer new tokens.")
    notes = (f"Truncated to {keep} tokens ({len(ids) - keep} dropped).",) if len(ids) > keep else ()
    return torch.tensor([ids[:keep]], device=device), notes


def takes_cache(lm) -> bool:
    """Whether a transformers causal LM's forward reads a KV cache (a past_key_values argument of its own)."""
    return "past_key_values" in inspect.signature(lm.forward).parameters


NO_CACHE = ("This model's transformers class ({cls}) takes no KV cache: each new token reads the whole text again, so "
            "there is no cache to measure. Pick a decoder that keeps one, such as GPT-2, Llama, OPT or Qwen.")


def lm_steps(lm, ids: torch.Tensor, new_tokens: int, use_cache: bool = True, stop: int | None = None,
             choose=None):
    """models.generate.stream over a transformers causal LM `lm`, with its cache (HFCache) when use_cache and the
    class takes one (takes_cache); `choose` (logits (B, V) -> ids (B, 1)) picks each token instead of the argmax."""
    return stream(_Net(lm), ids, new_tokens, use_cache and takes_cache(lm), stop,
                  new_cache=lambda n_layers, capacity: HFCache(capacity), choose=choose)


class _Net:
    """A causal LM in models.generate.stream's calling convention: net(idx, cache) -> (logits, weights)."""

    def __init__(self, model) -> None:
        self.model = model
        self.blocks = range(model.config.num_hidden_layers)  # stream sizes its cache by len(blocks)

    def __call__(self, idx: torch.Tensor, cache: HFCache | None):
        out = self.model(input_ids=idx, past_key_values=None if cache is None else cache.inner,
                         use_cache=cache is not None)
        if cache is not None:
            cache.inner = out.past_key_values  # the model's own cache, made on its first step
        return out.logits, []  # (B, T, V); no weights: attend() takes them from one full pass afterwards

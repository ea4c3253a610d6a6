"""Greedy decoding one token at a time, with or without a KV cache: the one decode loop of the decoders here.

Works for any net with forward(idx, cache) -> (logits, per-layer weights) and .blocks (models.tiny's
TinyDecoder, models.decoder's Decoder, a transformers decoder through models.hf.decoders). The cache is
made by `new_cache(n_layers, capacity)`: models.kv_cache.KVCache by default, transformers' own through
models.hf.writing.HFCache. With the cache (preallocated for every position it will hold),
the prompt is fed once and then one token per step; without it, every step runs the whole sequence so
far. Each step is timed with the device synchronised. The token is the argmax unless `choose` (last logits (B, V)
-> ids (B, 1)) picks it, e.g. by sampling (experiments.next_token). It does not batch-stop per row, or keep
anything after yielding: callers keep what they need (experiments.kv_cache.Record keeps timings and logits).

    for step in stream(net, prompt, 16, use_cache=True):
        step.token, step.seconds, step.cache.nbytes()
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
import torch.nn as nn

from models.devices import synchronize
from models.kv_cache import KVCache


@dataclass(frozen=True)
class Step:
    ids: torch.Tensor             # (B, 1) the tokens chosen at this step
    logits: torch.Tensor          # (B, V) the logits they were chosen from (a copy)
    weights: list[torch.Tensor]   # per layer (B, nh, T_fed, T_keys): attention of the positions fed this step
    seconds: float                # wall time of this step's forward pass and argmax, device synchronised
    cache: KVCache | None         # the cache after this step (None without one); the same object every step
                                  # (an HFCache for transformers' models: the same measuring interface)

    @property
    def token(self) -> int:
        """The token chosen for batch row 0."""
        return int(self.ids[0, 0])


@torch.no_grad()
def stream(net: nn.Module, idx: torch.Tensor, max_new: int, use_cache: bool, stop: int | None = None,
           new_cache: Callable[[int, int], object] = KVCache,
           choose: Callable[[torch.Tensor], torch.Tensor] | None = None) -> Iterator[Step]:
    """Yield each Step continuing idx (B, T0) by up to max_new tokens (greedy unless `choose` picks); stops once
    every row wrote `stop`."""
    # the last token is never fed back, so the cache holds at most T0 + max_new - 1 positions
    cache = new_cache(len(net.blocks), idx.shape[1] + max_new - 1) if use_cache else None
    seq, feed = idx, idx  # (B, T0)
    for _ in range(max_new):
        synchronize(idx.device)
        start = time.perf_counter()
        logits, weights = net(feed, cache)  # (B, T_feed, V)
        last = logits[:, -1, :]  # (B, V)
        nxt = last.argmax(dim=-1, keepdim=True) if choose is None else choose(last)  # (B, 1)
        synchronize(idx.device)
        # a copy, not a view: a view would keep the whole (B, T, V) logits of every uncached step alive
        yield Step(nxt, last.clone(), weights, time.perf_counter() - start, cache)
        if stop is not None and (nxt == stop).all():
            return
        seq = torch.cat([seq, nxt], dim=1)  # (B, T0 + n)
        feed = nxt if use_cache else seq

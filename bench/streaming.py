"""streaming: the built-in `gpt` reading held-out Python reference text 8 times its 128-token context, token by
token, with four KV caches (experiments/sinks.py), and its attention on position 0.

window, sinks: W and S (S + W = 128, the trained context, as in the paper); text_tokens: tokens scored;
nll_full / nll_window / nll_window_sinks / nll_recompute: mean NLL in nats over the last half of the text
with the full cache (positions past 128 never trained), W recent tokens, S sinks + W recent, and the last W
tokens encoded again every step; first_token_mass: attention on position 0, mean over the last layer's heads
and query positions 1-127 of 12 held-out windows (uniform attention: uniform_first_token_mass);
peak_cache_entries: the most positions the streaming caches (window, sinks + window) held;
ms_per_token: median step times. "variants" holds the same for gpt-sink and gpt-nobos. One thread.
quick: W 32, S 4, 160 tokens, gpt only.
"""
from __future__ import annotations

import torch

import models
from experiments import sinks as S


def _one(name: str, n: int, window: int, sinks: int) -> dict:
    dec = models.load(name)
    ids = S.long_ids(dec, n)
    runs = {c: S.score(dec, ids, c, window, sinks).summary() for c in S.CACHES}
    mass = S.model_sink_mass(dec, 12, k=sinks)
    return {"window": window, "sinks": sinks, "text_tokens": int(ids.shape[1]),
            **{f"nll_{c}": round(r["nll"], 4) for c, r in runs.items()},
            "first_token_mass": round(float(mass["first"][-1].mean()), 4),
            "uniform_first_token_mass": round(mass["uniform_first"], 4),
            "strongest_head_first_token_mass": round(float(mass["first"].max()), 4),
            "first_k_mass_last_layer": round(float(mass["first_k"][-1].mean()), 4),
            "peak_cache_entries": max(runs["window"]["peak_entries"], runs["window_sinks"]["peak_entries"]),
            "peak_cache_entries_full": runs["full"]["peak_entries"],
            "ms_per_token": {c: round(r["ms_per_token"], 2) for c, r in runs.items()}}


def measure(quick: bool, sizes: tuple[int, int, int] | None = None) -> dict:
    """sizes: (text tokens, window, sinks) instead of quick's or the full ones (the smoke's)."""
    n, window, sinks = sizes or ((160, 32, 4) if quick else (1024, 124, 4))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        out = _one("gpt", n, window, sinks)
        if not quick:
            out["variants"] = {name: _one(name, n, window, sinks) for name in ("gpt-sink", "gpt-nobos")}
    finally:
        torch.set_num_threads(threads)
    return out

"""The KV view's pieces: the decoder of a shape and the MHA/GQA/MQA measurement (kept in the server's stores),
what one generation shows: the three live figures and the closing summary; and the tiny decoder's steps.

The figures read experiments.kv_cache Records ({"cached": Record, "uncached": Record} or the cached one alone) as
they fill and draw with viz.kv_cache.
"""
from __future__ import annotations

import streamlit as st
import torch

from analysis.kv import cache_norms, human_bytes
from data.sorting import END, MAX_DIGITS
from experiments.kv_cache import compare, generate, measure_variants
from models.decoder import DecoderConfig, build, prompt
from models.generate import stream
from ui import show
from ui.runtime import cache
from viz import kv_cache as V


def figures(records: dict, per_token: int) -> None:
    """Latency per token, cumulative time and cache memory, from the steps recorded so far."""
    cached = records["cached"]
    if not cached.positions:
        return
    seconds = {m: r.seconds for m, r in records.items()}
    lat, cum = st.columns(2)
    with lat:
        show.plot(V.latency(seconds), "kv_latency", key="kv_lat")
    with cum:
        show.plot(V.cumulative(seconds), "kv_total", key="kv_cum")
    show.plot(V.memory(cached.positions, cached.cache_bytes, per_token), "kv_memory", key="kv_mem")


def summary(records: dict, per_token: int, n: int) -> None:
    """The cache measured against the formula; with both runs, the speed-up and whether the tokens agree."""
    T, measured = records["cached"].positions[-1], records["cached"].cache_bytes[-1]
    lines = [f"Cache after {T} positions: **{human_bytes(measured)}** measured from its tensors; the formula "
             f"gives {per_token:,} × {T} = {human_bytes(per_token * T)}."]
    if "uncached" in records:
        r, runs = compare(records["cached"], records["uncached"]), records["cached"].runs
        ratio = r["uncached_s"] / r["cached_s"]
        speed = (f"**{ratio:.1f}× faster** with the cache" if ratio >= 1 else
                 f"**{1 / ratio:.1f}× slower** with the cache (at this size its bookkeeping costs more than it saves)")
        lines.append(f"{n} tokens, the fastest of {runs} interleaved generation{'s' * (runs > 1)} of each: cached "
                     f"{r['cached_s']:.2f} s, uncached {r['uncached_s']:.2f} s: {speed}; same tokens: "
                     f"**{r['same_tokens']}**, largest logit difference {r['max_abs_logit_diff']:.1e}.")
    st.success(" ".join(lines))


@cache.memo("models")
def decoder(shape: tuple, dtype: str, device: str, total_len: int, cap: int):
    """A decoder of this shape, held in the server's byte-bounded model store (ui.runtime.cache)."""
    net = build(DecoderConfig(*shape, dtype=dtype), device, total_len, cap)
    generate(net, prompt(net.cfg, device=device), 2, use_cache=True)  # warm-up: first calls pick kernels
    return net


@cache.memo("results", key=lambda progress, shape, dtype, device, n, cap: (shape, dtype, device, n))
def variants(progress, shape: tuple, dtype: str, device: str, n: int, cap: int) -> list[dict]:
    """The MHA/GQA/MQA measurement of this shape (a job's work), kept in the server's result store (the job's
    progress callback and the cache's cap are not part of its key)."""
    return measure_variants(DecoderConfig(*shape, dtype=dtype), n, device, cap, progress)


def tiny_steps(tiny, ids: list[int]):
    """After each token the tiny decoder writes: (written so far, the cache's norms, positions cached, bytes)."""
    written = []
    for step in stream(tiny.net, torch.tensor([ids], device=tiny.device), MAX_DIGITS + 1, True, END):
        written.append(step.token)
        yield list(written), cache_norms(step.cache.keys, step.cache.values), step.cache.seq_len(), step.cache.nbytes()


@cache.memo("results")
def tiny_written(device: str, dtype: str, ids: tuple[int, ...]) -> tuple:
    """The last of tiny_steps: the sorted digits and the finished cache."""
    *_, last = tiny_steps(cache.model("tiny", device, dtype), list(ids))
    return last

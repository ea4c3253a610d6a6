"""The attention-sinks view's glue: which models it compares, their sink mass (kept in the results store), and
the streaming run as a job with progress and cancel (ui.runtime.heavy), kept once done.

Models come from ui.runtime.cache and are only read (experiments.sinks changes nothing on them). Nothing here
draws a figure: viz.sinks does.
"""
from __future__ import annotations

import hashlib
from dataclasses import asdict

import numpy as np
import streamlit as st
import torch

import limits
from experiments import sinks as S
from limits import memory
from limits.errors import UserError
from models import builtin_folder
from ui import family
from ui.runtime import cache, heavy
from ui.state import Selection

VARIANTS = {"gpt": "<s> first in training", "gpt-sink": "learnable <sink> first", "gpt-nobos": "nothing fixed first"}
WINDOWS = 12          # context-long windows of held-out text per model for the sink mass
WINDOW_TOKENS = 256   # longest window measured (attention of L x H x T x T floats is kept per window)


def builtins() -> list[str]:
    """The three built-in layouts of `gpt` present in this copy (registry names)."""
    return [name for name in VARIANTS if (builtin_folder(name) / "config.json").is_file()]


def sidebar_model(sel: Selection):
    """(name, model) of the sidebar's model when this view can measure it (a decoder or the tiny decoder) and
    it is not one of the built-ins; otherwise None, after a switch offer when it cannot be measured at all."""
    if sel.model in VARIANTS:
        return None
    model = family.loaded(sel)
    if model is None:
        return None
    kind = family.family(model)
    if kind in ("tiny", "decoder"):
        return sel.model, model
    what = {"vision": "reads images", "encoder": "is an encoder that attends both ways",
            "encoder-decoder": "is an encoder-decoder"}.get(kind, "is not a causal decoder")
    family.switch(f"Attention sinks are a causal language model's: the sidebar's model {what}, so this view "
                  "measures the built-in GPT models.", ["gpt", "tiny"], "sink")
    return None


def streamable(model) -> bool:
    """Whether experiments.sinks.score can run this model (a Llama-style language model)."""
    try:
        S.check_llama_like(model)
    except UserError:
        return False
    return model.predicts == "next token"


@cache.memo("results")
def mass(name: str, device: str, dtype: str, k: int) -> dict:
    """experiments.sinks sink mass of one model: the tiny decoder over digit strings, a decoder over
    held-out reference windows."""
    model = cache.model(name, device, dtype)
    if family.family(model) == "tiny":
        return S.tiny_sink_mass(model, k=k)
    found = S.model_sink_mass(model, WINDOWS, k, max_len=WINDOW_TOKENS)
    memory.release_freed()  # the windows' activations, freed: glibc kept ~20 MB of them for the three built-ins
    return found


def masses(names: list[str], device: str, dtype: str, k: int) -> dict[str, dict]:
    """mass() of each model, with a progress bar while any is measured for the first time."""
    bar = st.progress(0.0, text="Measuring attention on the first tokens…")
    out = {}
    for i, name in enumerate(names):
        bar.progress(i / len(names), text=f"Measuring attention on the first tokens: {name}…")
        try:
            out[name] = mass(name, device, dtype, k)
        except UserError as err:
            st.info(f"{name}: {err}")
    bar.empty()
    return out


STRONG = 0.5  # a head with at least half its attention on position 0: the paper's strong sink (Xiao et al. 2023)


def conclusion(found: dict[str, dict]) -> str:
    """What the measured masses say about sinks, computed, never written in advance: whether any head holds a
    strong sink (STRONG of its attention on position 0), the strongest head against uniform attention, and
    whether later queries put less on position 0 than early ones.
    {"gpt": {"first": [[0.2, 0.7]], ...}} -> "gpt: 1 of 2 heads put at least half ... (L0 H1: 0.70) ..."
    """
    said = []
    for name, m in found.items():
        first = np.asarray(m["first"])                                      # (L, H)
        top = np.unravel_index(np.nanargmax(first), first.shape)
        strong = int((first >= STRONG).sum())
        pos = np.asarray(m["per_position"])                                  # (L, H, T): NaN where no query reached
        n = (~np.isnan(pos)).sum(axis=(0, 1))                               # (T,)
        curve = np.where(n > 0, np.nansum(pos, axis=(0, 1)) / np.maximum(n, 1), np.nan)  # (T,) mean of all heads
        seen = np.flatnonzero(~np.isnan(curve[1:])) + 1
        early, late = seen[:max(1, len(seen) // 4)], seen[len(seen) // 2:]
        trend = ("later queries put less on it" if np.nanmean(curve[late]) < np.nanmean(curve[early]) else
                 "later queries put as much on it or more")
        said.append(f"{name}: {strong or 'no'} head{'s' if strong != 1 else ''} of {first.size} "
                    f"put{'s' if strong == 1 else ''} at least half their attention on position 0; strongest "
                    f"L{top[0]} H{top[1]} {first[top]:.2f} against {m['uniform_first']:.3f} for uniform attention; "
                    f"{trend} ({np.nanmean(curve[early]):.3f} early, {np.nanmean(curve[late]):.3f} late)")
    grown = [n for n, m in found.items() if (np.asarray(m["first"]) >= STRONG).any()]
    verdict = (f"{' and '.join(grown)} grow{'s' if len(grown) == 1 else ''} strong sinks like the paper's"
               if grown else "None of these models grows the paper's strong sinks")
    return f"{verdict} (at least {STRONG:.0%} of a head's attention on position 0). " + ". ".join(said) + "."


def text_ids(name: str, device: str, dtype: str, source: str, text: str, n: int) -> torch.Tensor:
    """(1, n) ids of the held-out reference or of the sidebar text (cut to n tokens) for cache.model(name, device,
    dtype), on its device: tokenized once per server for a model, text and n (the whole reference takes a tenth of
    a second of CPU), each call gets its own tensor."""
    ids = _ids(name, device, dtype, None if source == "reference" else text, n)  # (1, n), read-only
    return torch.tensor(ids, device=cache.model(name, device, dtype).device)


@cache.memo("results")
def _ids(name: str, device: str, dtype: str, text: str | None, n: int) -> np.ndarray:
    return S.long_ids(cache.model(name, device, dtype), n, text).cpu().numpy()  # (1, n)


def _score(progress, dec, ids, window: int, sinks: int) -> dict:
    runs = S.score_all(dec, ids, window, sinks, progress)
    return {cache_: asdict(run) for cache_, run in runs.items()}


def stream(name: str, sel: Selection, dec, ids, window: int, sinks: int) -> dict | None:
    """The four runs of these settings: kept ones at once, else a job (started by the caller's button)."""
    key = ("sink_stream", name, sel.device, sel.dtype, window, sinks,
           hashlib.blake2b(np.asarray(ids.cpu()).tobytes(), digest_size=16).hexdigest())
    return heavy.run("sink_stream", key, "Scoring token by token…", _score, dec, ids, window, sinks,
                     ask=heavy.Ask("sink_go", "Stream the text through the four caches"))


def caps() -> int:
    return limits.current().stream_tokens

"""Cached computations of the pruning page (views/pruning.py), keyed by (model, device, dtype, text).

text is "" unless the model's task scores the sidebar text (masked-LM), so other tasks keep their
results when the text changes. Scores and curves move a progress bar, which st.cache_data would
replay on every rerun, so they go through `memo` (a small per-server store) instead.
"""
from __future__ import annotations

import json

import streamlit as st

from experiments import prune_tasks, pruning
from models import gates
from ui import cache


def task(key: tuple):
    """The pruning task of the cached model key[:3] (for key[3], the text it scores when it uses one)."""
    return prune_tasks.for_model(cache.model(*key[:3]), key[3])


@st.cache_resource
def _results() -> dict:
    """Results of computations that move a progress bar: key -> value."""
    return {}


def memo(key, compute):
    """store[key], computed on first use; the oldest result goes when 16 are held."""
    store = _results()
    if key not in store:
        while len(store) >= 16:
            store.pop(next(iter(store)))
        store[key] = compute()
    return store[key]


@st.cache_data(show_spinner="Measuring the metric…", max_entries=64)
def metric(key: tuple, n_eval: int, plan_json: str) -> float:
    return task(key).metric(n_eval)(json.loads(plan_json))


@st.cache_data(show_spinner="Running the gated model…", max_entries=16)
def gated_trace(key: tuple, text: str, text_b: str | None, plan_json: str):
    net = task(key).net
    with gates.gated(net, gates.mask(gates.head_counts(net), json.loads(plan_json))):
        return cache.model(*key[:3]).attend(text, text_b)


@st.cache_data(show_spinner="Pruning and timing…", max_entries=4)
def real_pruning(key: tuple, plan_json: str) -> tuple:
    t = task(key)
    return pruning.report(t.net, t.tokenizer, json.loads(plan_json), t.timing)

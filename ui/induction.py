"""Pieces of the Induction heads view: the shipped scores, a checkpoint's attention, the knock-outs (cached), and the
buttons that open a head in Heads or Inside a head with the sidebar set to the induction model.

A checkpoint is loaded once per server and device (store "models"); its attention on a text and the knock-outs at
the last checkpoint are kept as results. The knock-outs score EVAL sequences on the CPU copy (about a second).
"""
from __future__ import annotations

import streamlit as st

import models
from analysis.trace import AttentionTrace
from experiments import induction as ei
from models import induction as mi
from ui.classroom import links
from ui.runtime import cache


@cache.memo("results")
def record() -> dict:
    """scores.json: the per-checkpoint scores train/induction.py measured."""
    return mi.scores()


@cache.memo("models")
def checkpoint(step: int, device: str, dtype: str):
    return models.load("induction", device, dtype, checkpoint=step)


@cache.memo("results", spinner="Running the checkpoint…")
def trace(step: int, device: str, dtype: str, text: str) -> AttentionTrace:
    return checkpoint(step, device, dtype).attend(text)


@cache.memo("results", spinner="Knocking out each layer-0 head on fresh sequences…")
def knock_out() -> tuple[list[dict], int, list[float]]:
    """At the last checkpoint: the knock-out table, the induction head (layer 1's best prefix matcher) and the
    previous-token score of each layer-0 head on the same sequences."""
    net = checkpoint(mi.steps()[-1], "cpu", "float32").net
    result = ei.knock_out(net)
    ids = ei.eval_batch()[0]
    _, atts = ei.forward(net, ids)
    return result.table(), result.layer1_head, ei.previous_token(atts[0]).tolist()


def open_buttons(layer: int, head: int, text: str, step: int) -> None:
    """Two buttons: this head in Heads, and Inside a head, with the sidebar's model set to the checkpoint on screen
    ('induction@1100'; plain 'induction' for the last) and its text to these syllables."""
    sidebar = {"model": "induction" if step == mi.steps()[-1] else f"induction@{step}", "text": text}
    c1, c2 = st.columns(2)
    c1.button(f"Open L{layer} H{head} in Heads", key="ind_to_heads", icon="🔲", on_click=links.request,
              args=("heads", {"heads_layer": f"L{layer}", "heads_head": f"H{head}"}, sidebar))
    c2.button(f"Open L{layer} H{head} in Inside a head", key="ind_to_inside", icon="🧮", on_click=links.request,
              args=("inside_head", {"ih_model": "Induction (attention-only)", "ih_ind_layer": f"L{layer}",
                                    "ih_ind_head": f"H{head}"}, sidebar))

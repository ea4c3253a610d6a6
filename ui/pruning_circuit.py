"""The pruning lab's "keep the circuit's heads": the heads a circuit passes through (experiments.circuits, EAP on the
Circuits view's task) kept and every other head switched off, beside the same number of heads kept by the page's
gradient importance and kept at random, each plan scored by the lab's own task metric (ui.pruning.metric).

The circuit's task is the model's built-in one where it has one (brackets on gpt, repeated syllables on induction),
else the Patching view's pair; its size is the Circuits view's "Edges in the circuit" (20 until set there). Runs
only when its toggle is on, within the work budget. Single-head scores miss heads that matter together (backup
heads, Wang et al. 2023); a circuit keeps the heads a task's path runs through. It does not search for the smallest
circuit, and it scores the plans on the lab's task, which may differ from the circuit's.
"""
from __future__ import annotations

import json
import random
import re

import numpy as np
import pandas as pd
import streamlit as st

import limits
from data.circuit_tasks import BUILT_IN
from experiments import circuits
from experiments import importance as imp
from limits.errors import UserError
from ui import patching as pair_ui
from ui.pruning import metric
from ui.runtime import heavy, work
from ui.state import BIND

PAIRS = 4  # pairs of the task the edges are scored on
SEEDS = 3  # random plans averaged
_HEAD = re.compile(r"L(\d+)H(\d+)")


def heads_of(edges: pd.DataFrame) -> set[tuple[int, int]]:
    """The heads an edge list passes through: senders and receivers. ['L0H2' -> 'L1H3.k'] -> {(0, 2), (1, 3)}"""
    names = list(edges.sender) + list(edges.receiver)
    return {(int(m.group(1)), int(m.group(2))) for m in map(_HEAD.match, names) if m}


def pairs_for(model_key: str, m) -> tuple[list[tuple], str]:
    """The circuit's pairs and what they are, in words."""
    if model_key in BUILT_IN:
        make, what = BUILT_IN[model_key]
        return make(PAIRS), what
    pair = pair_ui.pair_for(model_key, m)
    texts = tuple(st.session_state.get(k) or v for k, v in zip(pair_ui.KEYS, (pair.clean, pair.corrupt,
                                                                             pair.answer, pair.wrong)))
    return [texts], f"the Patching view's pair “{texts[0]}” → {texts[2]!r}"


def render(model_key: str, m, key: tuple, n_eval: int, by_position: np.ndarray) -> None:
    """The section; by_position [L, positions] is the page's gradient importance (inf where there is no head)."""
    st.header("Keep the circuit's heads")
    try:
        circuits.check(m)
    except UserError as err:
        st.caption(str(err))
        return
    pairs, what = pairs_for(model_key, m)
    top = int(st.session_state.get("circ_top") or 20)
    every = [(int(layer), int(h)) for layer, h in zip(*np.nonzero(np.isfinite(by_position)))]
    budget = work.Budget(5 * len(pairs) + 2 + SEEDS, limits.current().pruning_forward_passes,
                         "forward passes and metric runs", "use the Patching view's pair")
    if not st.toggle(f"Find the circuit (EAP, its {top} strongest edges, on {what}) and compare plans that keep as "
                     "many heads", key="prune_circuit", **BIND):
        return
    try:
        circuits.check(m, pairs)
        E = heavy.run("prune_circuit", ("prune-circuit", model_key, key[1], key[2], tuple(pairs)),
                      "Scoring every edge…", lambda progress: circuits.edge_scores(m, pairs, progress=progress),
                      budget=budget, thread=False)
    except UserError as err:
        st.error(str(err))
        return
    if E is None:  # over the budget: its sentence is shown
        return
    kept = heads_of(E.loc[E.score.abs().nlargest(top).index]) & set(every)
    n = len(kept)
    by_importance = sorted(every, key=lambda h: -by_position[h])[:n]
    plans = {"the circuit's heads": kept, "the most important heads": set(by_importance)}
    plans |= {f"random (seed {s})": set(random.Random(s).sample(every, n)) for s in range(SEEDS)}
    rows = []
    for name, keep in plans.items():
        plan_json = json.dumps(imp.plan_of(sorted(set(every) - keep)), sort_keys=True)
        rows.append({"plan": name, "heads kept": n, "heads": " ".join(f"L{a}H{b}" for a, b in sorted(keep)),
                     "metric": round(metric(key, n_eval, plan_json), 4)})
    table = pd.DataFrame(rows)
    rand = table.metric[2:].mean()
    st.markdown(f"Keeping **{n}** of {len(every)} heads: the circuit's **{table.metric[0]:.1%}**, the most "
                f"important by gradient **{table.metric[1]:.1%}**, random **{rand:.1%}** (mean of {SEEDS} seeds), "
                f"with every head **{metric(key, n_eval, '{}'):.1%}**: the lab's metric above, on its own task, "
                "which is not the circuit's.")
    if n == len(every):
        st.info(f"The circuit's {top} strongest edges touch every head, so the plans keep the same heads: fewer "
                "edges (the Circuits view's count) make a smaller circuit to compare.")
    st.dataframe(table, hide_index=True)
    st.download_button("Circuit plan as JSON", json.dumps(imp.plan_of(sorted(set(every) - kept)), sort_keys=True),
                       "circuit_plan.json", "application/json", key="prune_circuit_plan",
                       help="The heads switched off (every head outside the circuit), as the plan above exports.")

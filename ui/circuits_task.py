"""The Circuits view's pairs as the page reads them: a built-in task's or the names task's (experiments.circuits_task),
the Patching view's pair as its boxes hold it now, or a CSV file the user uploads; every answer checked against the
model's tokenizer. Only this page-reading part is here; folded into views/circuits.py with ui/circuits_pick.py, the
page would take ~230 lines against a view's ~150.
"""
from __future__ import annotations

import streamlit as st

import limits
from data import circuit_tasks as tasks
from experiments import circuits_task as T
from limits.errors import UserError
from ui import patching as patch_ui


def task_pairs(task: str, model_key: str, model, n: int) -> list[tuple]:
    """The pairs of the chosen task (one of experiments.circuits_task.TASKS), or UserError with one sentence."""
    if task == T.BUILT:
        pairs = T.built_in_pairs(model_key, n)
    elif task == T.NAMES:
        pairs = T.names_pairs(model, n)
    elif task == T.PATCHING:
        pair = patch_ui.pair_for(model_key, model)
        pairs = [tuple(st.session_state.get(k) or v for k, v in zip(patch_ui.KEYS, (pair.clean, pair.corrupt,
                                                                                    pair.answer, pair.wrong)))]
    else:
        up = st.file_uploader("Pairs (CSV with columns clean, corrupt, answer, wrong)", type=["csv"], key="circ_csv")
        if up is None:
            raise UserError("Upload a CSV file of pairs with the columns clean, corrupt, answer, wrong.")
        pairs = tasks.from_csv(up.getvalue(), n, limits.current().pruning_upload_bytes)
    T.known_answers(model, pairs)
    return pairs

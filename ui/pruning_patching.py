"""The pruning view's patching beside its own importance: for one behaviour (a minimal pair), each head's patching
score (experiments.patching.patch_heads) next to the gradient importance the page judged heads by (its task's loss),
and their Spearman rank correlation (experiments.patching.rank_correlation, as the Patching view computes it).

The pair is the Patching view's, as its four boxes hold it in this session, else the model's example there
(ui.patching.pair_for). Runs only when its toggle is on, within the work budget, under a progress bar. Does not
patch the residual stream (the Patching view does) or change the plan.
"""
from __future__ import annotations

import numpy as np
import streamlit as st

import limits
from experiments import patching
from limits.errors import UserError
from ui import patching as pair_ui
from ui.runtime import work
from ui.show import plot
from ui.state import BIND
from viz.patching import versus_figure


def render(model_key: str, m, grad: np.ndarray, task_name: str) -> None:
    """The patching section under the pruning lab; grad [L, H] is the page's importance (inf past a layer's heads)."""
    st.header("Patching importance for one behaviour")
    try:
        patching.check(m)
    except UserError as err:
        st.caption(f"Patching needs a prediction to restore: {err}")
        return
    pair = pair_ui.pair_for(model_key, m)
    clean, corrupt, answer, wrong = (st.session_state.get(k) or v for k, v in
                                     zip(pair_ui.KEYS, (pair.clean, pair.corrupt, pair.answer, pair.wrong)))
    st.caption(f"Behaviour: “{clean}” → {answer!r} against “{corrupt}” → {wrong!r} (the Patching view's pair; change "
               "it there). Each head's output is copied from the clean run into the corrupted one; its score is the "
               "share of the logit difference it restores.")
    try:
        patching.lined_up(m, clean, corrupt, answer, wrong)     # runs nothing: the pair must fit this model
        n = len(patching.token_ids(m, clean))
    except UserError as err:  # not asked for yet: what to change, not an error
        st.info(f"This pair does not fit this model: {err} Set a pair of your own in the Patching view.")
        return
    budget = work.Budget(patching.rows_needed(m, n)[0], limits.current().pruning_forward_passes,
                         "sequences through the model", "shorten the two texts")   # 2 + every head
    if not st.toggle(f"Patch every head ({int(budget.cost)} sequences)", key="prune_patch", **BIND):
        return
    try:
        p = pair_ui.heads(m, model_key, (clean, corrupt, answer, wrong), budget)  # the Patching view's entry, shared
    except UserError as err:
        st.error(str(err))
        return
    if p is None:  # over the budget: its sentence is shown
        return
    rho = patching.rank_correlation(np.abs(p.scores), grad)
    st.caption(f"Spearman ρ = {rho:.2f} between |patching score| and the gradient importance above ({task_name}), "
               f"over {int((np.isfinite(p.scores) & np.isfinite(grad)).sum())} heads. Gradient importance is the "
               "slope of the task's loss over many inputs; patching is what one head does for this one behaviour.")
    plot(versus_figure(p.scores, grad, p.rows, f"gradient importance ({task_name})"), "pruning-patching",
         key="prune_patch_fig")

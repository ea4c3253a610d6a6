"""Cached computations of the pruning page (views/pruning.py), keyed by (model, device, dtype, text), and two of
its pieces: the sentence-count slider and the "Prune for real" section.

It stays apart from the view: the lab's other sections read it (ui/pruning_circuit.py scores its plans with metric),
and the view is at ~150 lines already. What is not Streamlit is experiments.pruning's (in_original_numbers, the
timing table) and experiments.importance's (the measures note).

text is "" unless the model's task scores the sidebar text (masked-LM), so other tasks keep their
results when the text changes. Scores and curves move a progress bar, which st.cache_data would
replay on every rerun, so the view runs and keeps them through ui.runtime.heavy.run instead.
"""
from __future__ import annotations

import json

import streamlit as st

import limits
from experiments import importance, prune_tasks, pruning
from limits.errors import UserError
from models import gates
from ui.runtime import cache
from ui.show import figure, plot
from ui.state import BIND
from viz.heads import overview

B = BIND  # the pruning view's short name


def task(key: tuple):
    """The pruning task of the cached model key[:3] (for key[3], the text it scores when it uses one)."""
    return prune_tasks.for_model(cache.model(*key[:3]), key[3], key[0])


@cache.memo("results", spinner="Measuring the metric…")
def metric(key: tuple, n_eval: int, plan_json: str) -> float:
    return task(key).metric(n_eval)(json.loads(plan_json))


@cache.memo("results", spinner="Running the gated model…")
def gated_trace(key: tuple, text: str, text_b: str | None, plan_json: str):
    net = task(key).net
    with gates.gated(net, gates.mask(gates.head_counts(net), json.loads(plan_json))):
        return cache.model(*key[:3]).attend(text, text_b)


def gated_section(key: tuple, text: str, text_b: str | None, plan_json: str) -> None:
    """The attention of the text with the plan's heads off, as the Heads view's overview, under its heading."""
    st.header("Attention with these heads off")
    st.caption("A head that is off still computes weights (shown), but its output is dropped, so later layers change.")
    try:
        tr = gated_trace(key, text, text_b, plan_json)
        for note in tr.notices:
            st.warning(note)
        plot(figure(overview, tr.weights, tr.tokens, tr.key_tokens), "gated-heads", key="prune_overview")
    except UserError as err:
        st.info(str(err))


def real_pruning(key: tuple, plan_json: str) -> pruning.Report:
    """Pruned, timed and exported (the zip counted in the results store's bytes), once per server; waits its turn."""
    t = task(key)
    with st.spinner("Pruning and timing…"):
        return cache.kept(("prune-real", key, plan_json),
                          lambda: pruning.report(t.net, t.tokenizer, json.loads(plan_json), t.timing), heavy=True)


def count_slider(col, label: str, bounds: tuple[int, int, int, int], key: str) -> int:
    """A count slider whose every value is reachable under the hosting cap (a fixed caption when only one is)."""
    lo, hi, default, step = bounds
    hi = min(hi, max(lo, limits.current().pruning_sentences))
    hi = lo + (hi - lo) // step * step
    if hi == lo:
        col.caption(f"{label}: {lo}.")
        return lo
    return col.slider(label, lo, hi, lo + (min(default, hi) - lo) // step * step, step=step, key=key, **B)


def real_pruning_section(key: tuple, ranked: list, device: str, t: prune_tasks.Task) -> None:
    """The "Prune for real" part: a share of the least important heads (`ranked` first) cut out, timed against the
    full model, and the pruned model to download with the line that loads it; or why this model cannot be cut."""
    st.header("Prune for real")
    if not t.prunable:
        st.caption(t.unprunable)
        return
    pct = st.slider("% of heads to remove (least important first)", 10, 90, 50, step=10, key="prune_pct", **B)
    plan = importance.first(ranked, pct / 100)
    if note := t.groups_note(plan):
        st.info(note)
    if st.toggle("Prune, time and export", key="prune_real", **B):
        r = real_pruning(key, json.dumps(plan, sort_keys=True))
        planned, cut = sum(map(len, plan.values())), r.heads_removed
        if not r.rows:
            st.info(f"The {planned} head{'s' if planned != 1 else ''} of this plan stay in the model as silent heads "
                    f"(their key/value groups keep their other heads), so it is no smaller ({r.params_full:,} "
                    "parameters) and there is nothing to time or export: remove whole groups (a larger share) to cut "
                    "heads out.")
            return
        st.dataframe(pruning.timing_rows(r.rows), hide_index=True)
        silent, fewer = planned - cut, 1 - r.params_pruned / r.params_full
        st.caption(f"Cut {cut} head{'s' if cut != 1 else ''}"
                   + ((" (1 more of the plan stays as a silent head: its key/value group keeps other heads)"
                       if silent == 1 else f" ({silent} more of the plan stay as silent heads: their key/value groups "
                       "keep other heads)") if silent else "")
                   + f": {r.params_full:,} parameters → {r.params_pruned:,} ({fewer:.{2 if fewer < 0.001 else 1}%} "
                   f"fewer). On {device}, fastest of 5 interleaved runs each (a busy machine still adds noise"
                   + ("; a cut this small cannot change the time measurably, so any speed-up above is that noise"
                      if fewer < 0.01 else "") + f"). Pruned vs gated model: largest difference {r.gap:.1e}.")
        st.download_button("Pruned model (.zip)", r.zip, "pruned_model.zip", help="safetensors weights, config and "
                           f"plan; unzip and reload with {t.reload}.")
        if t.load_code:  # a transformers export: modeling_pruned.py and auto_map travel in the zip
            st.caption("Unzipped to a folder OUT, it loads anywhere transformers is installed, without this project:")
            st.code(t.load_code, language="python", wrap_lines=True)

"""The corpus view's "Similar heads" tab: heads clustered by Jensen-Shannon distance, and the closest pairs.

A model of at most analysis.corpus_stats.JS_HEADS heads is compared pair by pair, every head with every head. A
larger one was compared within groups of consecutive layers when the corpus was run (corpus_stats.js_groups:
Llama-2-7B's 32 × 32 heads in 8 groups of 4 layers, 128 heads each), so the cost per token stays bounded: here
the reader picks a group, sees its dendrogram or map (128 leaves stay readable where 1,024 would not), and the
pairs table lists the closest pairs of every group. The page says which layers were compared. Does not compute
JS (the shards hold it) and never compares heads of two groups.
"""
from __future__ import annotations

import numpy as np
import streamlit as st

from analysis import corpus_stats as cs
from analysis import head_similarity
from analysis.corpus_stats import Shard
from ui import corpus_table as ct
from ui.show import plot
from ui.state import BIND
from viz import corpus as vc


def bound_line(stats: Shard) -> str:
    """What was compared, in words: every pair, or the groups of layers and why."""
    n_layers, n_heads = stats.shape
    k = cs.js_layers(n_layers, n_heads)
    rows = f"over {stats.js_rows:,} query tokens of every {cs.JS_EVERY}th sentence"
    if k == n_layers:
        return f"Every pair of the {n_layers * n_heads:,} heads compared {rows}."
    size = (f"{k * n_heads} heads, at most {cs.JS_HEADS} per group" if k * n_heads <= cs.JS_HEADS else
            f"{n_heads} heads: one layer, which is never split")
    group = f"groups of {k} consecutive layers" if k > 1 else "each layer"
    return (f"This model has {n_layers * n_heads:,} heads: comparing every pair would cost "
            f"{(n_layers * n_heads) ** 2 // 2:,} Jensen-Shannon rows per token, so heads were compared only within "
            f"{group} ({size}), {rows}. Heads of different groups are not compared.")


def tab(stats: Shard, labels: list[list[str]]) -> None:
    """The tab's body after its explanation: group picker (when there are groups), figure, bound, pairs."""
    n_layers, n_heads = stats.shape
    groups, dist, names = cs.js_groups(n_layers, n_heads), cs.js_distance(stats), cs.js_names(stats)
    g = 0
    if len(groups) > 1:
        g = st.selectbox("Layers compared", range(len(groups)), key="corpus_sim_group", **BIND,
                         format_func=lambda i: f"L{groups[i][0]}–L{groups[i][-1]}",
                         help="Heads are compared within groups of consecutive layers on a model this large.")
    span = f"layers L{groups[g][0]}–L{groups[g][-1]}" if len(groups) > 1 else "every layer"
    if st.radio("Draw", ["Dendrogram", "2-D map"], horizontal=True, key="corpus_sim_view", **BIND) == "Dendrogram":
        plot(vc.dendrogram(head_similarity.dendrogram(dist[g], names[g]), f"Heads of {span} clustered by attention"),
             f"corpus-dendrogram-{g}", key="corpus_dendro")
    else:
        flat = [labels[l][h] for l in groups[g] for h in range(n_heads)]
        plot(vc.head_map(head_similarity.mds(dist[g]), names[g], np.repeat(np.array(groups[g]), n_heads), flat,
                         f"Heads of {span} placed by Jensen-Shannon distance"), f"corpus-head-map-{g}",
             key="corpus_headmap")
    st.caption(bound_line(stats))
    cut = st.slider("Call two heads redundant under this distance", 0.05, 0.6, 0.3, 0.05, key="corpus_threshold",
                    **BIND)
    pairs = cs.js_pairs(stats, cut)
    if len(groups) > 1:
        st.caption(f"Closest pairs of every group ({len(pairs):,} under {cut:.2f}), closest first.")
    st.dataframe(ct.paged(pairs, n_layers, "corpus_pairs")[0] or [{"head": "none", "twin": "", "distance": None}],
                 hide_index=True)

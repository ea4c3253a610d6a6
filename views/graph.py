"""Attention as a graph: one layer as a token graph, all layers with rollout and flow, attention sinks."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd
import streamlit as st

import limits
from analysis.flow import attention_flow
from analysis.graph import in_strength, layer_matrix, layered_graph, pagerank, token_graph
from analysis.rollout import FUSIONS, fuse_heads, residual_attention, rollout
from ui import family, show, state
from ui.runtime import cache, heavy, work
from viz.graph import LAYOUTS, collectors_figure, edges_table, layered_figure, matrices_figure, token_graph_figure

INLINE_TOKENS = 32  # up to here flow takes well under a second and runs in the page; above, as a job with a bar
WINDOW = 40  # tokens one layer's graph draws at once


@cache.memo("results", key=lambda progress, weights, residual, fusion: (weights, residual, fusion))
def _flow(progress, weights: np.ndarray, residual: float, fusion: str) -> np.ndarray:
    """Exact flow, kept in the server's result store (weights by content, the job's progress not in the key); rows
    on two threads on a laptop, one when hosted."""
    workers = 1 if limits.hosted() else min(2, os.cpu_count() or 1)
    return attention_flow(weights, residual, fusion, progress=progress, workers=workers)


@cache.memo("results")
def _collectors(weights: np.ndarray, fusion: str, square: bool):
    fused = fuse_heads(weights, fusion)  # (L, Tq, Tk)
    return in_strength(fused), (pagerank(fused) if square else None)


st.title("Attention as a graph")
shown = family.text_trace("graph")
if shown is None:
    st.stop()
trace = shown.trace
weights, tokens, keys = trace.weights, trace.tokens, trace.key_tokens
n_layers, n_heads, square = trace.n_layers, trace.n_heads, trace.kind != "cross"

view = st.radio("View", ["One layer", "All layers", "Who collects attention"], horizontal=True, key="graph_view",
                bind="query-params")
fusion = st.radio("Fuse heads by", FUSIONS, horizontal=True, key="graph_fusion", bind="query-params",
                  help="How a layer's heads become one matrix: their mean, or the strongest or weakest head per pair.")

if view == "One layer":
    c1, c2, c3 = st.columns(3)
    layer = c1.selectbox("Layer", range(n_layers), n_layers - 1, key="graph_layer", format_func=lambda i: f"L{i}",
                         bind="query-params")
    head = c2.selectbox("Head", [-1, *range(n_heads)], key="graph_head", bind="query-params",  # -1, not None:
                        format_func=lambda h: "all heads, fused" if h < 0 else f"H{h}")  # None shows no choice
    head = None if head < 0 else head
    layout = c3.radio("Layout", LAYOUTS, horizontal=True, key="graph_layout", bind="query-params",
                      help="columns: queries left, keys right · circular · force: a spring layout, same every time")
    c1, c2 = st.columns(2)
    rule = c1.radio("Keep edges", ["top-k per token", "above a threshold"], horizontal=True, key="graph_rule",
                    bind="query-params")
    if rule == "top-k per token":
        state.clamp("graph_k", 1, max(2, min(10, len(keys))))
        top_k = c2.slider("k", 1, max(2, min(10, len(keys))), min(3, len(keys)), key="graph_k", bind="query-params")
        threshold = 0.0
    else:
        top_k = None
        threshold = c2.slider("Threshold", 0.0, 1.0, 0.1, 0.01, key="graph_threshold", bind="query-params")
    m = layer_matrix(weights, layer, head, fusion)  # (Tq, Tk)
    first, drawn = 0, tokens
    if square and len(tokens) > WINDOW:  # a long text: a window of tokens, so that each edge can be seen
        state.clamp("graph_focus", 0, len(tokens) - WINDOW)
        first = st.slider(f"Tokens drawn ({WINDOW} at a time)", 0, len(tokens) - WINDOW, 0, key="graph_focus",
                          **state.BIND)
        st.info(f"This text has {len(tokens)} tokens; the graph draws tokens {first}–{first + WINDOW - 1} and the "
                "attention among them (weights are the model's, over the whole text; edges to tokens outside the "
                "window are left out). Slide to move the window.")
        m, drawn = m[first:first + WINDOW, first:first + WINDOW], tokens[first:first + WINDOW]
    g = token_graph(m, drawn, None if square else keys, threshold=threshold, top_k=top_k, first=first)
    who = "fused heads" if head is None else f"H{head}"
    st.caption(f"{g.number_of_nodes()} nodes · {g.number_of_edges()} edges · L{layer}, {who}"
               + ("" if square else " · cross-attention: decoder steps (left) over source tokens (right)"))
    show.plot(token_graph_figure(g, layout, f"L{layer}, {who}"), "attention-graph", table=edges_table(g))

elif view == "All layers" and not square:
    st.info("Rollout and flow follow attention through the residual stream from layer to layer; "
            "cross-attention (decoder steps over source tokens) has no such path. "
            "The One layer view draws it as a bipartite graph.")

elif view == "All layers":
    c1, c2 = st.columns(2)
    residual = c1.slider("Residual weight r", 0.0, 1.0, 0.5, 0.05, key="graph_residual", bind="query-params",
                         help="A^ = (1 - r)·A + r·I: how much of each token passes straight through a layer.")
    state.clamp("graph_layers_k", 1, max(2, min(8, len(tokens))))
    top_k = c2.slider("Edges per token in the layered graph", 1, max(2, min(8, len(tokens))), min(2, len(tokens)),
                      key="graph_layers_k", bind="query-params")
    a_hat = residual_attention(weights, residual, fusion)  # (L, T, T)
    layers = layered_graph(a_hat, tokens, top_k=top_k)
    show.plot(layered_figure(layers, f"All {n_layers} layers, residual mixed in (top {top_k} edges per token)"),
              "attention-layers", table=edges_table(layers))
    caps = limits.current()
    panels = [(f"raw attention, L{n_layers - 1}", fuse_heads(weights[-1:], fusion)[0]),
              ("rollout", rollout(weights, residual, fusion))]
    budget = work.Budget(len(tokens) ** 2, caps.flow_tokens ** 2, "max-flow problems (one per token pair)",
                         f"shorten the text to {caps.flow_tokens} tokens to see flow; rollout stands in for it")
    if len(tokens) > caps.flow_tokens:
        st.warning(f"Exact attention flow runs one maximum flow per token pair, so here it is computed up to "
                   f"{caps.flow_tokens} tokens; this text has {len(tokens)}, so rollout stands in for it. "
                   "Shorten the text to see flow.")
    elif (flow := heavy.run("graph_flow", _flow.key(None, weights, residual, fusion), f"Exact flow, {len(tokens)} "
                            f"rows of {len(tokens)} maximum flows…", _flow.uncached, weights, residual, fusion,
                            budget=budget, light=len(tokens) <= INLINE_TOKENS)) is not None:
        panels.append(("flow", flow))
    st.caption("Rows: tokens at the top layer. Columns: input tokens. Each row sums to 1.")
    show.plot(matrices_figure(panels, tokens), "rollout-flow", table=True)

else:
    strength, rank = _collectors(weights, fusion, square)
    show.plot(collectors_figure(strength, rank, keys), "attention-collectors")
    table = pd.DataFrame({"token": [f"{t} ·{i}" for i, t in enumerate(keys)]})
    for l in range(n_layers):
        table[f"in L{l}"] = strength[l]
    if rank is None:
        st.caption("PageRank needs self-attention: a cross-attention graph has no walks back to the queries.")
    else:
        for l in range(n_layers):
            table[f"PageRank L{l}"] = rank[l]
    st.dataframe(table.sort_values(f"in L{n_layers - 1}", ascending=False).round(3), hide_index=True)
    st.caption("Tokens that draw far more than their share (1 per query on average) are attention sinks: "
               "often [CLS], [SEP] and punctuation in BERT.")

show.explain(
    "An attention matrix is a weighted directed graph: query token i points at key token j with weight A[i, j]. "
    "Across layers, each token also keeps part of itself through the residual stream. **Rollout** multiplies the "
    "layers to follow how the input gets mixed; **flow** treats the weights as pipe capacities and asks how much "
    "can travel from top token i to input token j at most (a maximum flow per pair, Abnar & Zuidema 2020).",
    r"\hat A_l = \mathrm{rownorm}\big((1-r)\,A_l + r\,I\big),\quad R = \hat A_L \cdots \hat A_1,\quad "
    r"F_{ij} = \frac{\mathrm{maxflow}(i_L \to j_0)}{\sum_k \mathrm{maxflow}(i_L \to k_0)}",
    "a = (1 - r) * w.mean(1) + r * torch.eye(T)      # w: [L, H, T, T] -> a: [L, T, T]\n"
    "a = a / a.sum(-1, keepdim=True)\n"
    "R = a[0]\n"
    "for layer in a[1:]:\n"
    "    R = layer @ R                                # rollout, [T, T]",
)

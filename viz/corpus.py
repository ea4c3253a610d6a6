"""Figures of the corpus view: a behaviour over every head, queries and keys in one plane, head similarity.

Figures only: they take arrays, names and hover texts (computed by analysis/ and experiments/), never a
model. Heads are named "L3 H1", numbered from 0.
"""
from __future__ import annotations

from collections import Counter

import numpy as np
import plotly.colors
import plotly.graph_objects as go

from viz.common import COLORSCALE, escape

QUERY_COLOUR, KEY_COLOUR = "#1b9e77", "#d95f8e"  # AttentionViz draws queries green and keys pink


def behaviour_map(values: np.ndarray, name: str, percent: bool) -> go.Figure:
    """One behaviour's corpus mean for every head: values [L, H], rows are layers, columns heads.

    The colours span a fixed range named in the colour bar's title, never the values' own spread (which would
    paint 10.84% and 10.9% as opposite ends): 0 to 100% for a share (percent), else 0 to the largest value."""
    n_layers, n_heads = values.shape
    text = [[("—" if np.isnan(v) else f"{v:.0%}" if percent else f"{v:.2f}") for v in row] for row in values]
    top = 1.0 if percent else max(float(np.nanmax(values)) if np.isfinite(values).any() else 1.0, 1e-9)
    scale = "colour: 0 to 100%" if percent else f"colour: 0 to {top:.2f}"
    fig = go.Figure(go.Heatmap(
        z=np.round(values, 4), x=[f"H{h}" for h in range(n_heads)], y=[f"L{l}" for l in range(n_layers)],
        zmin=0.0, zmax=top, text=text, texttemplate="%{text}", colorscale=COLORSCALE,
        colorbar=dict(title=f"{escape(name)}<br>({scale})", tickformat=".0%" if percent else None),
        hovertemplate="%{y} %{x}<br>" + escape(name) + " %{text}<extra></extra>",
    ))
    fig.update_yaxes(autorange="reversed", title="layer")
    fig.update_xaxes(side="top", title="head")
    fig.update_layout(height=max(260, 48 * n_layers + 90), margin=dict(l=10, r=10, t=50, b=10))
    return fig


def qk_scatter(q2: np.ndarray, k2: np.ndarray, colour_by: str, positions: np.ndarray, tokens: list[str],
               hover: list[str], title: str) -> go.Figure:
    """Queries (circles) and keys (diamonds) of one head in one 2-D embedding.

    q2, k2: [N, 2] for the same N tokens; colour_by: "query or key", "position" or "token" (the ten most
    frequent tokens in colour, the rest grey); hover: one text per token (its sentence, marked).
    """
    safe = [escape(h) for h in hover]
    fig = go.Figure()
    for xy, kind, plural, symbol, solid in ((q2, "query", "queries", "circle", QUERY_COLOUR),
                                            (k2, "key", "keys", "diamond", KEY_COLOUR)):
        marker = dict(symbol=symbol, size=5, opacity=0.7)
        if colour_by == "position":
            marker.update(color=positions, colorscale=COLORSCALE, cmin=0, cmax=max(int(positions.max()), 1),
                          showscale=kind == "query", colorbar=dict(title="position"))
        elif colour_by == "token":
            top = [t for t, _ in Counter(tokens).most_common(10)]
            palette = dict(zip(top, plotly.colors.qualitative.D3))
            marker.update(color=[palette.get(t, "#cccccc") for t in tokens])
        else:
            marker.update(color=solid)
        fig.add_trace(go.Scattergl(x=xy[:, 0], y=xy[:, 1], mode="markers", name=plural, marker=marker,
                                   text=safe, hovertemplate=f"{kind}: %{{text}}<extra></extra>"))
    fig.update_layout(title=title, height=560, margin=dict(l=10, r=10, t=50, b=10),
                      legend=dict(orientation="h", y=-0.05), xaxis=dict(showticklabels=False, title=""),
                      yaxis=dict(showticklabels=False, title="", scaleanchor="x"))
    return fig


def dendrogram(tree: dict, title: str) -> go.Figure:
    """scipy's dendrogram coordinates (icoord, dcoord, ivl) drawn as lines; leaves are heads."""
    fig = go.Figure()
    for xs, ys in zip(tree["icoord"], tree["dcoord"]):
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color="#555", width=1), hoverinfo="skip",
                                 showlegend=False))
    leaves = tree["ivl"]
    size = max(6, min(9, 800 // max(len(leaves), 1)))  # 128 leaves (a group of Llama-2-7B's heads): 6 px, no overlap
    fig.update_xaxes(tickmode="array", tickvals=[5 + 10 * i for i in range(len(leaves))], ticktext=leaves,
                     tickangle=-90, tickfont=dict(size=size))
    fig.update_yaxes(title="Jensen-Shannon distance (average linkage)")
    fig.update_layout(title=title, height=420, margin=dict(l=10, r=10, t=50, b=70))
    return fig


def head_map(xy: np.ndarray, names: list[str], layers: np.ndarray, labels: list[str], title: str) -> go.Figure:
    """Heads as points whose distances approximate their Jensen-Shannon distances; colour = layer."""
    fig = go.Figure(go.Scatter(
        x=xy[:, 0], y=xy[:, 1], mode="markers+text", text=names, textposition="top center",
        textfont=dict(size=9), customdata=[escape(s) for s in labels],
        marker=dict(color=layers, colorscale=COLORSCALE, size=10, colorbar=dict(title="layer")),
        hovertemplate="%{text}: %{customdata}<extra></extra>",
    ))
    fig.update_layout(title=title, height=520, margin=dict(l=10, r=10, t=50, b=10),
                      xaxis=dict(showticklabels=False, title=""), yaxis=dict(showticklabels=False, title="",
                                                                             scaleanchor="x"))
    return fig

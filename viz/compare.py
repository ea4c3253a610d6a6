"""Figures for the compare page: two sentences' attention side by side, and their difference per head.

Figures only: takes arrays and token lists, never runs a model. Tokens sit at numeric positions
with escaped tick labels, so repeated or HTML-like tokens stay distinct and inert.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz.common import COLORSCALE, escape, token_labels


def side_by_side(row_a: np.ndarray, row_b: np.ndarray, keys_a: list[str], keys_b: list[str],
                 title_a: str, title_b: str) -> go.Figure:
    """Bars of the attention the chosen tokens pay to each key of A (left) and of B (right). rows: [Tk]"""
    fig = make_subplots(rows=1, cols=2, subplot_titles=(escape(title_a), escape(title_b)), shared_yaxes=True)
    for col, (row, keys) in enumerate(((row_a, keys_a), (row_b, keys_b)), start=1):
        labels = token_labels(keys)
        fig.add_trace(go.Bar(x=list(range(len(keys))), y=np.round(row, 4), hovertext=labels, showlegend=False,
                             marker_color="#440154" if col == 1 else "#21918c",
                             hovertemplate="key %{hovertext}<br>attention %{y:.3f}<extra></extra>"), row=1, col=col)
        fig.update_xaxes(tickmode="array", tickvals=list(range(len(keys))), ticktext=labels, tickangle=-45,
                         row=1, col=col)
    fig.update_yaxes(title_text="summed attention", row=1, col=1)
    fig.update_layout(height=380, margin=dict(l=10, r=10, t=40, b=10))
    return fig


def difference_per_head(size: np.ndarray, title: str) -> go.Figure:
    """Heatmap of how differently the chosen tokens attend in B than in A, one cell per head. size: [L, H]"""
    n_layers, n_heads = size.shape
    fig = go.Figure(go.Heatmap(z=np.round(size, 4), x=list(range(n_heads)), y=list(range(n_layers)), zmin=0,
                               colorscale=COLORSCALE, colorbar=dict(title="difference"),
                               hovertemplate="layer %{y}, head %{x}<br>difference %{z:.3f}<extra></extra>"))
    fig.update_xaxes(title="head", tickmode="array", tickvals=list(range(n_heads)),
                     ticktext=[f"H{h}" for h in range(n_heads)])
    fig.update_yaxes(title="layer", tickmode="array", tickvals=list(range(n_layers)),
                     ticktext=[f"L{l}" for l in range(n_layers)], autorange="reversed")
    fig.update_layout(title=escape(title), height=min(600, 120 + 40 * n_layers),
                      margin=dict(l=10, r=10, t=50, b=10))
    return fig


def key_difference(diff: np.ndarray, keys: list[str], title: str) -> go.Figure:
    """Signed bars, B minus A, over the keys both sentences share. diff: [P]"""
    labels = token_labels(keys)
    colors = ["#21918c" if d >= 0 else "#440154" for d in diff]
    fig = go.Figure(go.Bar(x=list(range(len(keys))), y=np.round(diff, 4), hovertext=labels, marker_color=colors,
                           hovertemplate="key %{hovertext}<br>B − A %{y:+.3f}<extra></extra>"))
    fig.update_xaxes(tickmode="array", tickvals=list(range(len(keys))), ticktext=labels, tickangle=-45)
    fig.update_yaxes(title="B − A", zeroline=True)
    fig.update_layout(title=escape(title), height=340, margin=dict(l=10, r=10, t=50, b=10))
    return fig

"""Figures for the head finder: every head's score for one behaviour, as a grid a click can pick from.

Figures only: takes an [L, H] score table, never runs a model. A scatter of square markers (not a
heatmap) so that a click selects one head; the best heads carry their rank.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.common import COLORSCALE, escape, head_grid_layout


def score_grid(scores: np.ndarray, behaviour: str, top: list[tuple[int, int]]) -> go.Figure:
    """Rows are layers (L0 at top), columns heads; colour = score (blank where undefined), the heads in
    `top` numbered 1, 2, ... by rank. Each point's customdata is [layer, head]."""
    n_layers, n_heads = scores.shape
    layer, head = np.divmod(np.arange(n_layers * n_heads), n_heads)
    values = np.asarray(scores, dtype=np.float64).ravel()
    name = escape(behaviour)
    hover = [f"L{l} H{h}<br>{name}: " + ("undefined" if np.isnan(v) else f"{v:.3f}") + "<br>click to open it in Heads"
             for l, h, v in zip(layer, head, values)]
    rank = {lh: i + 1 for i, lh in enumerate(top)}
    fig = go.Figure(go.Scatter(
        x=head, y=layer, mode="markers+text", hovertext=hover, hoverinfo="text",
        text=[str(rank.get((int(l), int(h)), "")) for l, h in zip(layer, head)],
        textfont=dict(color="white", size=13), customdata=np.stack([layer, head], 1),
        marker=dict(symbol="square", size=30, color=np.nan_to_num(values, nan=0.0), colorscale=COLORSCALE,
                    cmin=0.0, cmax=max(1e-9, float(np.nanmax(values)) if np.isfinite(values).any() else 1.0),
                    colorbar=dict(title=dict(text=name), thickness=12)),
    ))
    return head_grid_layout(fig, n_layers, n_heads)

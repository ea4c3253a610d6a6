"""Figures for the precision view: divergence per head for each variant, one head before and after,
and one weight matrix quantized with one scale per tensor or one per output channel.

Figures only: takes arrays and names, never runs a model.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz.common import COLORSCALE, DIVERGING, escape, token_labels


def divergence_grid(grids: dict[str, np.ndarray], stat: str) -> go.Figure:
    """One layer × head heatmap per variant on one colour scale (L0 at top). grids: title -> [L, H] in bits."""
    titles = [escape(t).replace(" (", "<br>(") for t in grids]  # "(per channel)" on a line of its own: 5 fit
    n = len(grids)
    fig = make_subplots(rows=1, cols=n, subplot_titles=titles, horizontal_spacing=0.04)
    top = max(max(float(np.max(g)) for g in grids.values()), 1e-6)
    for i, g in enumerate(grids.values()):
        layers, heads = g.shape
        fig.add_trace(go.Heatmap(
            z=g.astype(np.float32), x=[f"H{h}" for h in range(heads)], y=[f"L{l}" for l in range(layers)],
            zmin=0, zmax=top, colorscale=COLORSCALE, showscale=i == n - 1,
            colorbar=dict(title=dict(text=f"{escape(stat)}<br>JS (bits)")),
            hovertemplate="%{y} %{x}<br>JS %{z:.3g} bits<extra></extra>"), row=1, col=i + 1)
        fig.update_yaxes(autorange="reversed", row=1, col=i + 1, showticklabels=i == 0)
    fig.update_layout(height=180 + 26 * max(g.shape[0] for g in grids.values()),
                      margin=dict(l=10, r=10, t=64, b=10), plot_bgcolor="white")
    return fig


def before_after(ref: np.ndarray, var: np.ndarray, tokens: list[str], key_tokens: list[str], name: str) -> go.Figure:
    """fp32, the variant, and their difference for one head, side by side. ref, var: [Tq, Tk]"""
    diff = var.astype(np.float64) - ref.astype(np.float64)
    x, y = token_labels(key_tokens), token_labels(tokens)
    fig = make_subplots(rows=1, cols=3, horizontal_spacing=0.06,
                        subplot_titles=["fp32", escape(name), f"{escape(name)} − fp32"])
    for col, (z, scale, lo, hi) in enumerate([(ref, COLORSCALE, 0, 1), (var, COLORSCALE, 0, 1),
                                              (diff, DIVERGING, -np.abs(diff).max(), np.abs(diff).max())], start=1):
        fig.add_trace(go.Heatmap(z=np.round(z.astype(np.float32), 4), x=x, y=y, zmin=lo, zmax=hi or 1e-6,
                                 colorscale=scale, showscale=col in (2, 3),
                                 colorbar=dict(x=0.64 if col == 2 else 1.0, len=0.9),
                                 hovertemplate="query %{y}<br>key %{x}<br>%{z:.4f}<extra></extra>"), row=1, col=col)
        fig.update_xaxes(type="category", tickangle=-60, row=1, col=col)
        fig.update_yaxes(type="category", autorange="reversed", showticklabels=col == 1, row=1, col=col)
    fig.update_layout(height=min(700, 260 + 14 * len(tokens)), margin=dict(l=10, r=10, t=50, b=10))
    return fig


def channel_errors(errors: dict[str, np.ndarray], layer_name: str) -> go.Figure:
    """Relative error of each output channel's weights, one scale per tensor vs one per channel, channels
    sorted by their largest |weight|; the channel's max |w| on the right axis."""
    order = np.argsort(errors["absmax"])
    x = np.arange(len(order))
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(go.Scatter(x=x, y=errors["per_tensor"][order], mode="lines", name="one scale per tensor",
                             line=dict(color="#d1495b")))
    fig.add_trace(go.Scatter(x=x, y=errors["per_channel"][order], mode="lines", name="one scale per channel",
                             line=dict(color="#21918c")))
    fig.add_trace(go.Scatter(x=x, y=errors["absmax"][order], mode="lines", name="channel's max |w|",
                             line=dict(color="grey", dash="dot")), secondary_y=True)
    fig.update_layout(height=340, margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h", y=-0.25),
                      title=escape(f"int8 rounding error of {layer_name}, per output channel"))
    fig.update_xaxes(title="output channels, smallest range first")
    fig.update_yaxes(title="‖w − ŵ‖ / ‖w‖", secondary_y=False)
    fig.update_yaxes(title="max |w|", secondary_y=True, showgrid=False)
    return fig

"""Figures for the pruning lab: the layer × head importance grid and the pruning curve.

Figures only: takes arrays and labels, never runs a model. The grid is a scatter of square
markers (not a heatmap) so that a click selects one head; switched-off heads wear a cross.
"""
from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from viz.common import COLORSCALE


def importance_grid(importance: np.ndarray, labels: list[list[str]], off: set[tuple[int, int]],
                    score_name: str) -> go.Figure:
    """Rows are layers (L0 at top), columns heads; colour = score, hover = score and pattern label."""
    n_layers, n_heads = importance.shape
    layer, head = np.divmod(np.arange(n_layers * n_heads), n_heads)
    hover = [f"L{l} H{h}<br>{html.escape(score_name)} {importance[l, h]:.3f}<br>pattern: {html.escape(labels[l][h])}"
             + ("<br><b>switched off</b>" if (l, h) in off else "") for l, h in zip(layer, head)]
    fig = go.Figure(go.Scatter(
        x=head, y=layer, mode="markers", hovertext=hover, hoverinfo="text", customdata=np.stack([layer, head], 1),
        marker=dict(symbol="square", size=30, color=importance.ravel(), colorscale=COLORSCALE,
                    colorbar=dict(title=dict(text=html.escape(score_name)))),
    ))
    if off:
        ol, oh = zip(*sorted(off))
        fig.add_trace(go.Scatter(x=list(oh), y=list(ol), mode="markers", hoverinfo="skip",
                                 marker=dict(symbol="x-thin", size=22, line=dict(width=3, color="crimson"))))
    fig.update_layout(
        showlegend=False, height=120 + 38 * n_layers, margin=dict(l=10, r=10, t=40, b=10), clickmode="event+select",
        xaxis=dict(tickvals=list(range(n_heads)), ticktext=[f"H{h}" for h in range(n_heads)], side="top",
                   range=[-0.6, n_heads - 0.4], showgrid=False, zeroline=False),
        yaxis=dict(tickvals=list(range(n_layers)), ticktext=[f"L{l}" for l in range(n_layers)],
                   range=[n_layers - 0.4, -0.6], showgrid=False, zeroline=False),
    )
    return fig


def curve(result: dict, metric_name: str) -> go.Figure:
    """Metric vs % heads removed: importance order, reverse order, random mean with a ± 1 std band."""
    x = 100 * np.asarray(result["fractions"])
    mean, std = result["random_mean"], result["random_std"]
    seeds = len(result["random"])
    fig = go.Figure([
        go.Scatter(x=np.r_[x, x[::-1]], y=np.r_[mean + std, (mean - std)[::-1]], fill="toself", mode="none",
                   fillcolor="rgba(120,120,120,0.25)", hoverinfo="skip", name=f"random ± 1 std ({seeds} seeds)"),
        go.Scatter(x=x, y=mean, mode="lines+markers", name="random order (mean)", line=dict(color="grey", dash="dash")),
        go.Scatter(x=x, y=result["importance"], mode="lines+markers", name="least important first",
                   line=dict(color="#21918c", width=3)),
        go.Scatter(x=x, y=result["reverse"], mode="lines+markers", name="most important first",
                   line=dict(color="#d1495b")),
    ])
    fig.update_layout(xaxis_title="% of heads removed", yaxis_title=html.escape(metric_name), height=380,
                      margin=dict(l=10, r=10, t=10, b=10), legend=dict(orientation="h", y=-0.25),
                      hovermode="x unified")
    fig.update_xaxes(tickvals=list(x), ticksuffix="%")
    return fig

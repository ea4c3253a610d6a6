"""Figures for the pruning lab: the layer × head importance grid and the pruning curve.

Figures only: takes arrays and labels, never runs a model. The grid is a scatter of square
markers (not a heatmap) so that a click selects one head; switched-off heads wear a cross.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.common import COLORSCALE, VERMILLION, escape, head_grid_layout


def importance_grid(importance: np.ndarray, labels: list[list[str]] | None, off: set[tuple[int, int]],
                    score_name: str) -> go.Figure:
    """Rows are layers (L0 at top), columns heads; colour = score, hover = score and pattern label (if any).
    Non-finite scores (past a layer's heads after pruning) are not drawn."""
    real = np.isfinite(importance)
    n_layers, n_heads = importance.shape
    layer, head = np.nonzero(real)
    pattern = lambda l, h: f"<br>pattern: {escape(labels[l][h])}" if labels else ""  # noqa: E731
    hover = [f"L{l} H{h}<br>{escape(score_name)} {importance[l, h]:.3f}" + pattern(l, h)
             + ("<br><b>switched off</b>" if (l, h) in off else "") for l, h in zip(layer, head)]
    fig = go.Figure(go.Scatter(
        x=head, y=layer, mode="markers", hovertext=hover, hoverinfo="text", customdata=np.stack([layer, head], 1),
        marker=dict(symbol="square", size=30, color=importance[real], colorscale=COLORSCALE,
                    colorbar=dict(title=dict(text=escape(score_name)))),
    ))
    if off:
        ol, oh = zip(*sorted(off))
        fig.add_trace(go.Scatter(x=list(oh), y=list(ol), mode="markers", hoverinfo="skip",
                                 marker=dict(symbol="x-thin", size=22, line=dict(width=3, color=VERMILLION))))
    return head_grid_layout(fig, n_layers, n_heads)


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
    fig.update_layout(xaxis_title="% of heads removed", yaxis_title=escape(metric_name), height=380,
                      margin=dict(l=10, r=10, t=10, b=10), legend=dict(orientation="h", y=-0.25),
                      hovermode="x unified")
    fig.update_xaxes(tickvals=list(x), ticksuffix="%")
    return fig


def plan_curve(sizes: list[int], n_heads: int, curves: dict[str, list[float]], random: np.ndarray, metric_name: str,
               chance: float, threshold: float, plan_removed: int, plan_value: float) -> go.Figure:
    """Metric vs heads removed for the iterative plan and one-pass, reverse and random orders (mean ± 1 std band
    over seeds), with the chance level, the threshold a plan must keep, and the recommended plan marked."""
    x = 100 * np.asarray(sizes) / n_heads
    mean, std = random.mean(0), random.std(0)
    styles = {"iterative": dict(color="#21918c", width=3), "one-pass": dict(color="#3b528b", dash="dot"),
              "reverse": dict(color="#d1495b")}
    fig = go.Figure([
        go.Scatter(x=np.r_[x, x[::-1]], y=np.r_[mean + std, (mean - std)[::-1]], fill="toself", mode="none",
                   fillcolor="rgba(120,120,120,0.25)", hoverinfo="skip", name=f"random ± 1 std ({len(random)} seeds)"),
        go.Scatter(x=x, y=mean, mode="lines+markers", name="random order (mean)", line=dict(color="grey", dash="dash")),
        *[go.Scatter(x=x, y=curves[name], mode="lines+markers", name=label, line=styles[name])
          for name, label in (("iterative", "iterative (re-scored each step)"), ("one-pass", "one-pass (scored once)"),
                              ("reverse", "most important first"))],
        go.Scatter(x=[100 * plan_removed / n_heads], y=[plan_value], mode="markers", name="recommended plan",
                   marker=dict(symbol="star", size=16, color="#fde725", line=dict(width=1, color="black"))),
    ])
    fig.add_hline(y=chance, line=dict(color="black", dash="dot", width=1), annotation_text="chance",
                  annotation_position="bottom left")
    fig.add_hline(y=threshold, line=dict(color="#21918c", dash="dash", width=1), annotation_text="threshold",
                  annotation_position="top left")
    fig.update_layout(xaxis_title="% of heads removed", yaxis_title=escape(metric_name), height=400,
                      margin=dict(l=10, r=10, t=10, b=10), legend=dict(orientation="h", y=-0.25),
                      hovermode="x unified")
    fig.update_xaxes(ticksuffix="%")
    return fig

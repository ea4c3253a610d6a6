"""Figures for the seq2seq view: the alignment heatmap, one decoding step, accuracy against length.

Pure functions of arrays and characters; they never run a model. Characters sit at numeric
positions with escaped tick labels (a space is drawn as ␣), so repeats never collapse.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz.common import BLUE, GREEN, PURPLE, VERMILLION, escape

COLORSCALE = "Viridis"
ATTENTION, FIXED = BLUE, VERMILLION


def char_labels(chars: list[str]) -> list[str]:
    """['a', ' ', '<'] -> ['a', '␣', '&lt;']"""
    return [escape(c) if c != " " else "␣" for c in chars]


def alignment(source: list[str], output: list[str], weights: np.ndarray, title: str = "",
              step: int | None = None) -> go.Figure:
    """Heatmap of weights (len(output), len(source)): row t is where the decoder looked to write output[t].
    `step` outlines that row (the decoding step being shown)."""
    T_out, T_in = weights.shape
    fig = go.Figure(go.Heatmap(
        z=weights, x=list(range(T_in)), y=list(range(T_out)), zmin=0, zmax=1, colorscale=COLORSCALE,
        colorbar=dict(title="weight", thickness=12),
        customdata=np.array([[f"{o} ← {s}" for s in char_labels(source)] for o in char_labels(output)]),
        hovertemplate="%{customdata}: %{z:.3f}<extra></extra>"))
    if step is not None and 0 <= step < T_out:
        fig.add_shape(type="rect", x0=-0.5, x1=T_in - 0.5, y0=step - 0.5, y1=step + 0.5,
                      line=dict(color="#ff7f0e", width=3))
    fig.update_layout(
        title=title, height=max(260, min(28 * T_out, 640) + 120), margin=dict(l=60, r=20, t=50, b=60),
        xaxis=dict(title="input character", tickvals=list(range(T_in)), ticktext=char_labels(source),
                   tickangle=0, side="bottom"),
        yaxis=dict(title="output character", tickvals=list(range(T_out)), ticktext=char_labels(output),
                   autorange="reversed"))
    return fig


def step_bars(source: list[str], weights: np.ndarray, output: list[str], step: int) -> go.Figure:
    """Bar chart of the attention over the input while writing output[step]."""
    row = weights[step]                                                  # (T_in,)
    fig = go.Figure(go.Bar(x=list(range(len(source))), y=row, marker_color=ATTENTION,
                           customdata=char_labels(source), hovertemplate="%{customdata}: %{y:.3f}<extra></extra>"))
    written = "".join(output[: step + 1])
    fig.update_layout(
        title=f"Step {step + 1} of {len(output)}: wrote '{char_labels([output[step]])[0]}' → "
              f"{escape(written)}",
        height=260, margin=dict(l=50, r=20, t=50, b=50), yaxis=dict(title="weight", range=[0, 1]),
        xaxis=dict(tickvals=list(range(len(source))), ticktext=char_labels(source), tickangle=0))
    return fig


def accuracy_by_length(lengths: list[int], curves: dict[str, dict[str, list[float]]]) -> go.Figure:
    """Exact match and per-character accuracy against input length, one line per model.
    curves: {'with attention': {'exact': [...], 'char': [...]}, 'no attention': {...}}"""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("exact match", "per-character accuracy"))
    colors = [ATTENTION, FIXED, GREEN, PURPLE]
    for (name, curve), color in zip(curves.items(), colors):
        for col, key in ((1, "exact"), (2, "char")):
            fig.add_trace(go.Scatter(x=lengths, y=curve[key], name=name, legendgroup=name, showlegend=col == 1,
                                     mode="lines+markers", marker=dict(size=4), line=dict(color=color),
                                     hovertemplate="length %{x}: %{y:.0%}<extra>" + escape(name) + "</extra>"),
                          row=1, col=col)
    fig.update_xaxes(title_text="input length (characters)")
    fig.update_yaxes(range=[0, 1.02], tickformat=".0%")
    fig.update_layout(height=360, margin=dict(l=50, r=20, t=50, b=50), legend=dict(orientation="h", y=-0.25))
    return fig

"""Figures for the inside-one-head view: one heatmap per step, the √d_k entropy curves, the mask.

Pure functions from arrays to plotly Figures; they never run a model. Token labels go on numeric
axes through tickvals/ticktext (repeated tokens stay separate) and are HTML-escaped. Masked
scores (-inf) are drawn as gaps and say so on hover.
"""
from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from analysis.tokens import readable_all

SQUARE = ("QKᵀ", "÷√d_k", "mask", "softmax")  # steps whose columns are key tokens
ANNOTATE_ROWS, ANNOTATE_COLS = 16, 8  # write numbers in the cells only where they stay legible


def _ticks(labels: list[str]) -> dict:
    return {"tickvals": list(range(len(labels))), "ticktext": [html.escape(t) for t in readable_all(labels)]}


def _dim_ticks(n: int) -> dict:
    """At most ~16 labelled feature dimensions: 384 -> 0, 24, 48, ..."""
    stride = -(-n // 16)
    return {"tickvals": list(range(0, n, stride)), "ticktext": [str(j) for j in range(0, n, stride)]}


def step_heatmap(name: str, values: np.ndarray, tokens: list[str], key_tokens: list[str] | None = None) -> go.Figure:
    """One step as a heatmap titled with its shape: rows are query tokens; columns are key tokens
    for the T x T steps and feature dimensions for X, Q, K, V and A·V."""
    z = np.asarray(values, dtype=np.float64)
    masked = ~np.isfinite(z)
    z = np.where(masked, np.nan, z)
    cols = (key_tokens or tokens) if name in SQUARE else [str(j) for j in range(z.shape[1])]
    probs = name == "softmax"
    hover_cols = [html.escape(c) for c in readable_all(cols)]
    custom = np.array([[hover_cols[j] for j in range(z.shape[1])] for _ in range(z.shape[0])])
    text = np.where(masked, "masked (−∞)", np.char.mod("%.3f", np.nan_to_num(z)))
    heat = go.Heatmap(
        z=z, customdata=custom, text=text,
        colorscale="Blues" if probs else "RdBu", reversescale=not probs,
        zmin=0 if probs else None, zmax=1 if probs else None, zmid=None if probs else 0,
        hovertemplate="query %{y}<br>column %{customdata}<br>%{text}<extra></extra>",
        texttemplate="%{text}" if z.shape[0] <= ANNOTATE_ROWS and z.shape[1] <= ANNOTATE_COLS else None,
        textfont={"size": 9},
    )
    fig = go.Figure(heat)
    fig.update_layout(
        title=f"{html.escape(name)}  ({z.shape[0]} × {z.shape[1]})", height=max(260, 22 * z.shape[0] + 120),
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        xaxis={**(_ticks(cols) if name in SQUARE else _dim_ticks(z.shape[1])),
               "title": "key" if name in SQUARE else "dimension"},
        yaxis={**_ticks(tokens), "autorange": "reversed", "title": "query"},
    )
    return fig


def entropy_figure(result: dict) -> go.Figure:
    """Left: variance of q·k against d_k, with and without ÷√d_k. Right: mean softmax row entropy."""
    d = result["d_k"]
    fig = make_subplots(cols=2, subplot_titles=("variance of q·k", "softmax row entropy (nats)"))
    for suffix, label, dash, color in (("unscaled", "QKᵀ", "solid", "#1f77b4"),
                                       ("scaled", "QKᵀ / √d_k", "dash", "#d62728")):
        line = {"dash": dash, "color": color}
        fig.add_trace(go.Scatter(x=d, y=result[f"var_{suffix}"], name=label, line=line, legendgroup=suffix,
                                 mode="lines+markers"), row=1, col=1)
        fig.add_trace(go.Scatter(x=d, y=result[f"entropy_{suffix}"], name=label, line=line, legendgroup=suffix,
                                 mode="lines+markers", showlegend=False), row=1, col=2)
    fig.add_hline(y=float(result["max_entropy"]), line={"dash": "dot", "color": "gray"}, row=1, col=2,
                  annotation_text="uniform", annotation_position="bottom right")
    fig.update_xaxes(type="log", title="d_k")
    fig.update_yaxes(type="log", row=1, col=1)
    fig.update_layout(height=360, margin={"l": 10, "r": 10, "t": 40, "b": 10})
    return fig


def mask_effect(bidirectional: np.ndarray, causal: np.ndarray, tokens: list[str]) -> go.Figure:
    """softmax weights without and with the causal mask, side by side (rows: query, columns: key)."""
    fig = make_subplots(cols=2, subplot_titles=("no mask: every token sees every token",
                                               "causal mask: token i sees tokens ≤ i"), horizontal_spacing=0.08)
    for col, w in ((1, bidirectional), (2, causal)):
        fig.add_trace(go.Heatmap(z=np.asarray(w, dtype=np.float64), colorscale="Blues", zmin=0, zmax=1,
                                 showscale=col == 2, hovertemplate="query %{y}, key %{x}: %{z:.3f}<extra></extra>"),
                      row=1, col=col)
    fig.update_xaxes(**_ticks(tokens), title="key")
    fig.update_yaxes(**_ticks(tokens), autorange="reversed")
    fig.update_layout(height=max(300, 22 * len(tokens) + 120), margin={"l": 10, "r": 10, "t": 60, "b": 10})
    return fig

"""Figures of the attention-sinks view: sink mass per layer × head, per query position, and streaming runs
(NLL and cache size against position for each cache).

Every function takes arrays already measured (experiments/sinks.py) and returns a Figure; nothing here
runs a model. Layers and heads are numbered from 0 ("L3 H1").
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz.common import BLUE, GREEN, PALETTE, VERMILLION, legend_below

_HEIGHT = 340
CACHE_COLORS = {"full": PALETTE[7], "window": VERMILLION, "window_sinks": BLUE, "recompute": GREEN}
CACHE_DASHES = {"full": "dot", "window": "dash", "window_sinks": "solid", "recompute": "dashdot"}


def sink_heatmaps(masses: dict[str, np.ndarray], what: str) -> go.Figure:
    """One layers × heads heatmap per model, one colour scale: masses {model: (L, H)}; `what` names the mass."""
    names = list(masses)
    top = max(float(np.nanmax(m)) for m in masses.values())
    fig = make_subplots(rows=1, cols=len(names), subplot_titles=names, horizontal_spacing=0.06)
    for i, (name, m) in enumerate(masses.items()):
        L, H = m.shape
        text = [[f"{m[layer, h]:.3f}" for h in range(H)] for layer in range(L)]
        fig.add_trace(go.Heatmap(
            z=m, x=[f"H{h}" for h in range(H)], y=[f"L{layer}" for layer in range(L)], text=text,
            texttemplate="%{text}", zmin=0, zmax=top, colorscale="Viridis", showscale=i == len(names) - 1,
            colorbar=dict(title="mass"), hovertemplate=f"{name}<br>%{{y}} %{{x}}: %{{z:.3f}}<extra></extra>"),
            row=1, col=i + 1)
        fig.update_xaxes(title_text="head", row=1, col=i + 1)
        fig.update_yaxes(autorange="reversed", row=1, col=i + 1, title_text="layer" if i == 0 else None)
    fig.update_layout(title=what, height=_HEIGHT, margin=dict(l=60, r=20, t=80, b=50))
    return fig


def per_position(curves: dict[str, np.ndarray], uniform: np.ndarray, which: str) -> go.Figure:
    """Mass on position 0 against query position, one line per model, and uniform causal attention 1/(q+1)."""
    fig = go.Figure()
    for i, (name, curve) in enumerate(curves.items()):  # a dash each: told apart without their colours too
        fig.add_trace(go.Scatter(x=np.arange(1, len(curve)), y=curve[1:], mode="lines", name=name,
                                 line=dict(color=PALETTE[i % 6], dash=("solid", "dash", "dashdot", "longdash")[i % 4]),
                                 hovertemplate=f"{name}<br>query %{{x}}: %{{y:.3f}}<extra></extra>"))
    fig.add_trace(go.Scatter(x=np.arange(1, len(uniform)), y=uniform[1:], mode="lines", name="uniform 1/(q+1)",
                             line=dict(dash="dot", color="black"),
                             hovertemplate="uniform<br>query %{x}: %{y:.3f}<extra></extra>"))
    fig.update_yaxes(type="log", dtick=1, exponentformat="power")  # powers of ten only: no minor labels ('5 2')
    return legend_below(fig, f"Attention on position 0<br>by query position ({which})", "query position",
                   "weight on position 0 (log)")


def _running_mean(x: np.ndarray, width: int) -> np.ndarray:
    """Mean of the last `width` values at each point: [1, 3, 5], 2 -> [1, 2, 4]"""
    c = np.cumsum(np.insert(np.asarray(x, dtype=float), 0, 0.0))
    idx = np.arange(1, len(x) + 1)
    return (c[idx] - c[np.maximum(idx - width, 0)]) / np.minimum(idx, width)


def nll(runs: dict[str, np.ndarray], window: int, sinks: int, context: int, smooth: int = 32) -> go.Figure:
    """Per-token NLL (running mean of `smooth`) against the position of the predicted token, one line per cache."""
    fig = go.Figure()
    for cache, values in runs.items():
        fig.add_trace(go.Scatter(
            x=np.arange(1, len(values) + 1), y=_running_mean(values, smooth), mode="lines",
            name=cache_label(cache, window, sinks),
            line=dict(color=CACHE_COLORS.get(cache), dash=CACHE_DASHES.get(cache)),
            hovertemplate=f"{cache_label(cache, window, sinks)}<br>token %{{x}}: %{{y:.2f}} nats<extra></extra>"))
    fig.add_vline(x=context, line=dict(dash="dot", color="grey"),
                  annotation_text=f"trained context ({context})", annotation_position="top left")
    return legend_below(fig, f"Negative log-likelihood per token (running mean of {smooth})",
                   "position of the predicted token in the text", "NLL (nats)")


def cache_size(entries: dict[str, np.ndarray], nbytes: dict[str, np.ndarray], window: int, sinks: int) -> go.Figure:
    """Key/value positions held at each step, one line per cache; hover adds the bytes measured."""
    fig = go.Figure()
    for cache, e in entries.items():
        fig.add_trace(go.Scatter(
            x=np.arange(1, len(e) + 1), y=e, customdata=np.asarray(nbytes[cache]) / 1024, mode="lines",
            name=cache_label(cache, window, sinks),
            line=dict(color=CACHE_COLORS.get(cache), dash=CACHE_DASHES.get(cache)),
            hovertemplate=f"{cache_label(cache, window, sinks)}<br>token %{{x}}: %{{y}} positions, "
                          "%{customdata:.0f} KiB<extra></extra>"))
    return legend_below(fig, "Cache size while streaming", "tokens read", "key/value positions held (every layer)")


def cache_label(cache: str, window: int, sinks: int) -> str:
    """'window_sinks', 60, 4 -> '4 sinks + window of 60'"""
    return {"full": "full cache", "window": f"window of {window}",
            "window_sinks": f"{sinks} sinks + window of {window}",
            "recompute": f"recompute last {window}"}.get(cache, cache)

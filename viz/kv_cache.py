"""Plotly figures for the KV-cache view: latency per token, cumulative time, cache memory, MHA/GQA/MQA,
and a growing cache drawn position by position.

Every function takes numbers already measured (models/decoder.py) or computed (analysis/kv.py)
and returns a Figure; nothing here runs a model. Tokens are tick text over numeric positions.
"""
from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz.common import BLUE, GREEN, VERMILLION, legend_below, token_labels

_HEIGHT = 320
COLORS = {"cached": BLUE, "uncached": VERMILLION, "formula": GREEN}
DASH = {"cached": "solid", "uncached": "dash"}


def latency(runs: dict[str, list[float]]) -> go.Figure:
    """Milliseconds per generated token, one line per run ('cached', 'uncached'), on a log axis."""
    fig = go.Figure([
        go.Scatter(x=np.arange(1, len(s) + 1), y=np.asarray(s) * 1e3, mode="lines", name=name,
                   line=dict(color=COLORS.get(name), dash=DASH.get(name)),
                   hovertemplate="token %{x}<br>%{y:.2f} ms<extra></extra>")
        for name, s in runs.items()
    ])
    fig.update_yaxes(type="log", dtick="D2")  # labels at 1, 2 and 5 of each decade: every digit crowded the axis
    return legend_below(fig, "Latency per token", "generated token", "ms (log scale)")


def cumulative(runs: dict[str, list[float]]) -> go.Figure:
    """Seconds spent so far after each generated token: a line for the cache, a parabola without it."""
    fig = go.Figure([
        go.Scatter(x=np.arange(1, len(s) + 1), y=np.cumsum(s), mode="lines", name=name,
                   line=dict(color=COLORS.get(name), dash=DASH.get(name)),
                   hovertemplate="token %{x}<br>%{y:.3f} s<extra></extra>")
        for name, s in runs.items()
    ])
    return legend_below(fig, "Total time", "generated tokens", "seconds")


def memory(positions: list[int], measured: list[int], per_token: int, formula: list[int] | None = None,
           per_token_is: str = "2·L·kv_heads·head_dim·bytes") -> go.Figure:
    """Cache bytes measured from its tensors (markers) against per_token * T (line), in KiB, `per_token_is` its
    formula in the legend; `formula`: the formula's bytes at each of `positions` instead, where layers keep different
    counts (sliding windows). The y axis
    runs from 0 past both, so the formula is on the chart however far it is from what was measured; a single position
    (one token written) draws the formula as a point, since a line needs two."""
    t = np.asarray(positions)
    line = t * per_token if formula is None else np.asarray(formula)
    top = max(float(np.max(line, initial=0)), float(np.max(measured, initial=0))) / 1024  # KiB
    fig = go.Figure([
        go.Scatter(x=t, y=line / 1024, mode="lines" if len(t) > 1 else "markers",
                   marker=dict(size=12, color=COLORS["formula"]),
                   name=f"formula {per_token_is}·T" if formula is None
                   else "formula: each layer's kept positions",
                   line=dict(color=COLORS["formula"], width=6), opacity=0.4),
        go.Scatter(x=t, y=np.asarray(measured) / 1024, mode="markers", name="measured from the cache tensors",
                   marker=dict(color=COLORS["cached"], size=4),
                   hovertemplate="T = %{x}<br>%{y:,.1f} KiB<extra></extra>"),
    ])
    fig.update_yaxes(range=[0, 1.1 * top if top > 0 else 1])
    fig.update_xaxes(tickformat="d", dtick=max(1, math.ceil((t.max(initial=1) - t.min(initial=0)) / 8)))  # whole T
    return legend_below(fig, "Cache memory", "cached positions T", "KiB")


def variants(rows: list[dict]) -> go.Figure:
    """MHA / GQA / MQA side by side: KV bytes per token and median cached ms per token.

    rows: [{'kind': 'MHA', 'kv_heads': 8, 'bytes_per_token': 8192, 'median_ms': 1.9}, ...]
    """
    labels = [f"{r['kind']} ({r['kv_heads']} kv)" for r in rows]
    x = np.arange(len(rows))
    fig = make_subplots(rows=1, cols=2, subplot_titles=("KV bytes per token", "median ms per cached token"))
    fig.add_trace(go.Bar(x=x, y=[r["bytes_per_token"] for r in rows], marker_color=COLORS["cached"],
                         hovertemplate="%{y:,} bytes<extra></extra>", showlegend=False), 1, 1)
    fig.add_trace(go.Bar(x=x, y=[r["median_ms"] for r in rows], marker_color=COLORS["formula"],
                         hovertemplate="%{y:.2f} ms<extra></extra>", showlegend=False), 1, 2)
    fig.update_xaxes(tickvals=x, ticktext=labels)
    return legend_below(fig, "Same model, fewer key/value heads", "", "")


def cache_grid(norms: np.ndarray, tokens: list[str], capacity: int, kinds: tuple[str, str] = ("k", "v")) -> go.Figure:
    """A cache as it fills: rows layer·k / layer·v (`kinds`: what each layer's two tensors hold, a latent and a
    rotary key under multi-head latent attention), one column per cached position (coloured by the vector's norm),
    empty columns up to `capacity`. norms: [2 * layers, T]"""
    rows, T = norms.shape
    z = np.full((rows, capacity), np.nan, dtype=np.float32)  # (2L, capacity)
    z[:, :T] = norms
    names = [f"L{i // 2} {kinds[i % 2]}" for i in range(rows)]  # the layers as every view numbers them
    fig = go.Figure(go.Heatmap(
        z=z, x=np.arange(capacity), y=np.arange(rows), colorscale="Blues", showscale=False, xgap=2, ygap=2,
        hovertemplate="position %{x}<br>%{customdata}<br>|vector| %{z:.2f}<extra></extra>",
        customdata=np.array([names] * capacity).T,
    ))
    fig.update_xaxes(tickvals=np.arange(T), ticktext=token_labels(tokens[:T]), range=[-0.5, capacity - 0.5])
    fig.update_yaxes(tickvals=np.arange(rows), ticktext=names, autorange="reversed")
    return legend_below(fig, f"Its cache: {T} positions", "cached token", "", height=80 + 36 * rows)

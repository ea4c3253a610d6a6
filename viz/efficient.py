"""Figures for the efficient-attention views: pattern masks, pair counts, receptive fields, a pattern's effect
on a real model, measured cost curves, and the online softmax of one query block.

Shared by two views, so named after neither: Sparse (views/sparse.py: masks, pairs, receptive fields, a real
model) and Tiled (views/tiled.py: the tiles, the online softmax; ui/efficient.py, the two views' common glue,
draws the cost curves).

Every function takes arrays already computed (analysis.sparsity, analysis.efficient) or measured
(experiments.*) and returns a Figure; nothing here runs a model or a kernel.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz.common import BLUE, COLORSCALE, GREEN, PALETTE, PURPLE, VERMILLION, legend_below, token_labels

_HEIGHT = 340
KEPT, DROPPED, HIDDEN = "#1f77b4", "#f2f2f2", "#fbe3d6"
COLORS = {"dense": VERMILLION, "sliding_window": BLUE, "block_sparse": GREEN, "tiled": PURPLE,
          "sdpa": "#7f7f7f", "sdpa_flash": "#8c564b", "sdpa_efficient": "#e377c2"}


def pattern_grid(masks: dict[str, np.ndarray], titles: dict[str, str], causal: np.ndarray | None = None,
                 counts: dict[str, int] | None = None, cols: int = 4) -> go.Figure:
    """One small mask per pattern: kept pairs dark, dropped light; with `causal`, pairs the decoder hides anyway
    are tinted; with `counts`, each title gives the pairs kept. masks: name -> [n, n] bool (query rows, key columns)."""
    names = list(masks)
    rows = -(-len(names) // cols)
    heads = [titles[k] + (f"<br>{counts[k]:,} pairs" if counts else "") for k in names]
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=heads,
                        horizontal_spacing=0.03, vertical_spacing=0.08)
    for i, name in enumerate(names):
        m = masks[name].astype(np.uint8)  # 1 kept, 0 dropped
        z = m if causal is None else np.where(causal, m, 2)  # 2: above the diagonal of a decoder
        fig.add_trace(go.Heatmap(z=z, zmin=0, zmax=2, showscale=False, colorscale=[
            [0, DROPPED], [0.33, DROPPED], [0.34, KEPT], [0.66, KEPT], [0.67, HIDDEN], [1, HIDDEN]],
            hovertemplate="query %{y}<br>key %{x}<extra></extra>"), row=i // cols + 1, col=i % cols + 1)
    fig.update_yaxes(autorange="reversed", showticklabels=False)
    fig.update_xaxes(showticklabels=False, scaleanchor=None)
    fig.update_layout(height=250 * rows + 40, margin=dict(l=10, r=10, t=50, b=10))
    fig.update_annotations(font_size=12)
    return fig


def pair_counts(counts: dict[str, int], n: int, titles: dict[str, str]) -> go.Figure:
    """Pairs each pattern scores against n^2, as bars with their share of n^2 written on them."""
    names = list(counts)
    fig = go.Figure(go.Bar(x=[titles[k] for k in names], y=[counts[k] for k in names], marker_color=KEPT,
                           text=[f"{counts[k] / n**2:.0%}" for k in names], textposition="outside",
                           hovertemplate="%{x}<br>%{y:,} pairs<extra></extra>"))
    fig.add_hline(y=n * n, line_dash="dot", line_color=COLORS["dense"], annotation_text=f"n² = {n * n:,}")
    return legend_below(fig, f"Query-key pairs scored over {n} tokens", "", "pairs")


def pairs_vs_n(ns: list[int], curves: dict[str, list[int | None]], titles: dict[str, str]) -> go.Figure:
    """Pairs each pattern keeps against n on log-log axes (gaps where its settings do not fit that n)."""
    fig = go.Figure([go.Scatter(x=ns, y=row, mode="lines+markers", name=titles[k], line_color=None,
                                hovertemplate="n=%{x:,}: %{y:,} pairs<extra></extra>") for k, row in curves.items()])
    fig.update_xaxes(type="log")
    fig.update_yaxes(type="log", tickformat="~s")
    return legend_below(fig, "Pairs against n, from each pattern's formula", "n (log)", "pairs (log)")


def reach_band(reach: list[np.ndarray], query: int, tokens: list[str]) -> go.Figure:
    """Which input tokens can reach token `query` after 1..L layers: one row per layer, the band grows down."""
    z = np.stack([r[query] for r in reach]).astype(np.uint8)  # (L, n)
    fig = go.Figure(go.Heatmap(z=z, x=token_labels(tokens), y=[f"L = {i + 1}" for i in range(len(reach))], zmin=0,
                               zmax=1, showscale=False, colorscale=[[0, DROPPED], [1, KEPT]], xgap=1, ygap=1,
                               hovertemplate="after %{y} layers<br>%{x}<extra></extra>"))
    fig.update_xaxes(type="category", tickangle=-60, showticklabels=len(tokens) <= 64)
    fig.update_yaxes(type="category", autorange="reversed", dtick=1)
    return legend_below(fig, f"What can reach {token_labels(tokens)[query]} (position {query})", "input token",
                   "layers", height=max(260, 140 + 24 * len(reach)))


def coverage(fractions: dict[str, list[float]], titles: dict[str, str]) -> go.Figure:
    """Share of (query, input) pairs connected after 1..L layers, one line per pattern."""
    fig = go.Figure([go.Scatter(x=np.arange(1, len(f) + 1), y=f, mode="lines+markers", name=titles[k],
                                hovertemplate="%{x} layers: %{y:.0%}<extra></extra>") for k, f in fractions.items()])
    fig.update_yaxes(range=[0, 1.05], tickformat=".0%")
    return legend_below(fig, "Receptive field: pairs connected after L layers", "layers L", "connected")


def layer_effect(dropped: np.ndarray, agree: np.ndarray, layer_cosine: np.ndarray | None) -> go.Figure:
    """Per layer: dense attention weight on dropped pairs, rows whose top key is unchanged, hidden-state cosine."""
    x = [f"L{i}" for i in range(len(dropped))]
    fig = go.Figure([
        go.Bar(x=x, y=dropped, name="dense weight on dropped pairs", marker_color=COLORS["dense"]),
        go.Scatter(x=x, y=agree, name="rows with the same top key", mode="lines+markers", line_color=KEPT),
    ])
    if layer_cosine is not None:
        fig.add_trace(go.Scatter(x=x, y=layer_cosine, name="cosine of hidden states", mode="lines+markers",
                                 line_color=COLORS["block_sparse"]))
    fig.update_yaxes(range=[0, 1.05])
    return legend_below(fig, "What the pattern changes, layer by layer", "layer", "share / cosine")


def attention_pair(dense: np.ndarray, sparse: np.ndarray, tokens: list[str], title: str) -> go.Figure:
    """One head's weights [T, T] without and with the pattern, side by side on one colour scale."""
    labels = token_labels(tokens)
    fig = make_subplots(rows=1, cols=2, subplot_titles=["dense", "with the pattern"], horizontal_spacing=0.1)
    top = float(max(dense.max(), sparse.max(), 1e-6))
    for col, w in ((1, dense), (2, sparse)):
        fig.add_trace(go.Heatmap(z=np.round(w.astype(np.float32), 4), x=labels, y=labels, zmin=0, zmax=top,
                                 colorscale=COLORSCALE, showscale=col == 2,
                                 hovertemplate="query %{y}<br>key %{x}<br>%{z:.3f}<extra></extra>"), row=1, col=col)
    fig.update_xaxes(type="category", tickangle=-60, showticklabels=len(tokens) <= 40)
    fig.update_yaxes(type="category", autorange="reversed", showticklabels=len(tokens) <= 40)
    return legend_below(fig, title, height=min(800, 300 + 16 * len(tokens)))


def cost_curves(points: dict[str, dict[int, dict]], field: str, labels: dict[str, str],
                slopes: dict[str, float]) -> go.Figure:
    """Measured seconds or peak bytes against n on log-log axes, the fitted slope in each legend entry."""
    fig = go.Figure()
    for method, pts in points.items():
        ns = sorted(pts)
        ys = [pts[n][field] for n in ns]
        fmt = "%{y:.3g} s" if field == "seconds" else "%{y:.3s}B"
        fig.add_trace(go.Scatter(x=ns, y=[max(y, 1) if field != "seconds" else y for y in ys], mode="lines+markers",
                                 name=f"{labels.get(method, method)} (slope {slopes[method]:.2f})",
                                 line_color=COLORS.get(method), hovertemplate=f"n=%{{x:,}}<br>{fmt}<extra></extra>"))
    fig.update_xaxes(type="log", tickvals=sorted({n for p in points.values() for n in p}))
    fig.update_yaxes(type="log")
    what = "Time per call" if field == "seconds" else "Peak memory beyond the inputs"
    return legend_below(fig, what, "sequence length n (log)", "seconds (log)" if field == "seconds" else "bytes (log)",
                   height=400)


def tile_map(scores: np.ndarray, tokens: list[str], rows: tuple[int, int], cols: tuple[int, int],
             seen: int, causal: bool) -> go.Figure:
    """The head's full scaled scores [T, T] faded, the query block's rows and the current key block outlined,
    the key blocks already folded in shaded: what tiled attention holds at this step is only that rectangle."""
    labels, n = token_labels(tokens), len(tokens)
    z = scores.astype(np.float32).copy()
    if causal:
        z[np.triu_indices(n, 1)] = np.nan
    fig = go.Figure(go.Heatmap(z=np.round(z, 3), x=list(range(n)), y=list(range(n)), colorscale=COLORSCALE,
                               opacity=0.55, colorbar=dict(title=dict(text="q·k/√d", side="right")),
                               hovertemplate="query %{y}<br>key %{x}<br>score %{z:.2f}<extra></extra>"))

    def box(r0: int, r1: int, c0: int, c1: int, **kw) -> None:
        fig.add_shape(type="rect", x0=c0 - 0.5, x1=c1 - 0.5, y0=r0 - 0.5, y1=r1 - 0.5, xref="x", yref="y", **kw)

    every = -(-n // 24)  # at most 24 labels an axis: 46 tokens -> every second one (hover names each)
    ticks = dict(tickvals=list(range(0, n, every)), ticktext=labels[::every])
    fig.update_xaxes(range=[-0.5, n - 0.5], tickangle=-90, title="key token", **ticks)
    fig.update_yaxes(range=[n - 0.5, -0.5], title="query token", **ticks)
    if seen:
        box(*rows, 0, seen, fillcolor="rgba(31,119,180,0.15)", line=dict(width=0))
    box(*rows, 0, n, line=dict(color="black", width=1, dash="dot"))
    box(*rows, *cols, line=dict(color=VERMILLION, width=3))
    return legend_below(fig, "This head's scores q·k/√d", height=min(700, 280 + 14 * n))


def online_state(ms: np.ndarray, ls: np.ndarray, row_labels: list[str], step: int) -> go.Figure:
    """Running max m and running sum l of each query row after each key block. ms, ls: [steps, rows]."""
    x = np.arange(ms.shape[0])
    fig = make_subplots(rows=1, cols=2, subplot_titles=["running max m", "running sum l"])
    palette = PALETTE
    for r, label in enumerate(row_labels):
        color = palette[r % len(palette)]
        for col, (ys, name) in enumerate(((ms[:, r], "m"), (ls[:, r], "l")), start=1):
            fig.add_trace(go.Scatter(x=x, y=ys, mode="lines+markers", name=label, legendgroup=label,
                                     showlegend=col == 1, line_color=color,
                                     hovertemplate=f"{label}<br>key block %{{x}}: {name} = %{{y:.3f}}<extra></extra>"),
                          row=1, col=col)
    for col in (1, 2):
        fig.add_vline(x=step, line_dash="dot", line_color=VERMILLION, row=1, col=col)
    fig.update_xaxes(title="key block", dtick=1)
    return legend_below(fig, "The running state after each key block", height=340)

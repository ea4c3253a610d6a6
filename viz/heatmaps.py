"""Attention heatmaps: every layer × head at a glance, and one head large.

Figures only: takes arrays and token lists, never runs a model. The overview is one heatmap of
all heads tiled with white gaps, holding whole percents as uint8 (what the eye can see at that
size), so 72 heads of 128 tokens travel as ~1.6 MB and paint as one canvas image.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.common import COLORSCALE, token_labels

GAP = 255  # cell value of the white gap between heads; real cells hold 0..100


def tile(weights: np.ndarray, shared_scale: bool, gap: int = 1) -> np.ndarray:
    """[L, H, Tq, Tk] -> uint8 [L*(Tq+gap), H*(Tk+gap)] of whole percents, GAP between heads.

    Shared: percent of 1. Per head: percent of that head's own maximum.
    """
    n_layers, n_heads, tq, tk = weights.shape
    w = np.clip(weights, 0, 1)
    if not shared_scale:
        w = w / np.maximum(w.max(axis=(2, 3), keepdims=True), 1e-12)
    pct = np.rint(w * 100).astype(np.uint8)                           # (L, H, Tq, Tk)
    grid = np.full((n_layers, tq + gap, n_heads, tk + gap), GAP, np.uint8)
    grid[:, :tq, :, :tk] = pct.transpose(0, 2, 1, 3)                  # (L, Tq, H, Tk)
    return grid.reshape(n_layers * (tq + gap), n_heads * (tk + gap))


def _axis_labels(prefix: str, count: int, tokens: list[str], gap: int) -> list[str]:
    """Unique category labels for a tiled axis: 'L2 · the', and invisible distinct ones for gaps."""
    toks = token_labels(tokens)
    labels = []
    for b in range(count):
        labels += [f"{prefix}{b} · {t}" for t in toks]
        labels += ["\u200b" * (b * gap + g + 1) for g in range(gap)]
    return labels


def overview(weights: np.ndarray, tokens: list[str], key_tokens: list[str], shared_scale: bool = False) -> go.Figure:
    """All heads, one row per layer and one column per head, labelled L0.. and H0... weights: [L, H, Tq, Tk]."""
    n_layers, n_heads, tq, tk = weights.shape
    z = tile(weights, shared_scale)
    top = int(z[z != GAP].max()) or 1
    stop = top / GAP
    scale = [[stop * i / 8, c] for i, c in enumerate(_viridis9())] + [[min(stop + 1e-6, 1.0), "white"], [1.0, "white"]]
    unit = "% of 1" if shared_scale else "% of this head's max"
    x = _axis_labels("H", n_heads, key_tokens, 1)
    y = _axis_labels("L", n_layers, tokens, 1)
    fig = go.Figure(go.Heatmap(
        z=z, x=x, y=y, zmin=0, zmax=GAP, colorscale=scale, showscale=False,
        hovertemplate=f"query %{{y}}<br>key %{{x}}<br>%{{z}} {unit}<extra></extra>",
    ))
    fig.update_xaxes(type="category", tickmode="array", tickvals=[x[h * (tk + 1) + tk // 2] for h in range(n_heads)],
                     ticktext=[f"H{h}" for h in range(n_heads)], side="top", showgrid=False, title="head")
    fig.update_yaxes(type="category", tickmode="array", tickvals=[y[l * (tq + 1) + tq // 2] for l in range(n_layers)],
                     ticktext=[f"L{l}" for l in range(n_layers)], autorange="reversed", showgrid=False, title="layer")
    fig.update_layout(height=min(900, max(300, 110 * n_layers)), margin=dict(l=10, r=10, t=40, b=10),
                      plot_bgcolor="white")
    return fig


def _viridis9() -> list[str]:
    import plotly.colors

    return plotly.colors.sample_colorscale(COLORSCALE, [i / 8 for i in range(9)])


def head(weights: np.ndarray, tokens: list[str], key_tokens: list[str], title: str) -> go.Figure:
    """One head large: token labels on both axes, hover with query, key and weight. weights: [Tq, Tk]."""
    x, y = token_labels(key_tokens), token_labels(tokens)
    fig = go.Figure(go.Heatmap(
        z=np.round(weights.astype(np.float32), 4), x=x, y=y, zmin=0, colorscale=COLORSCALE,
        colorbar=dict(title="weight"),
        hovertemplate="query %{y}<br>key %{x}<br>weight %{z:.3f}<extra></extra>",
    ))
    side = min(900, 260 + 18 * len(tokens))
    fig.update_layout(title=title, height=side, margin=dict(l=10, r=10, t=80, b=10),
                      xaxis=dict(title="key (attended to)", type="category", tickangle=-60, side="top"),
                      yaxis=dict(title="query (attending)", type="category", autorange="reversed"))
    return fig

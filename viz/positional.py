"""Plotly figures for positional encodings: curves, heatmaps, rotations, and the attention demo.

Every function takes arrays already computed by analysis/positional.py and returns a Figure.
Nothing here runs a model or computes an encoding. Tokens are shown as tick text over numeric
positions (a repeated "the" must stay two rows), labelled by viz.common.token_labels.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.common import token_labels

_HEIGHT = 360


def _layout(fig: go.Figure, title: str, x: str, y: str, height: int = _HEIGHT) -> go.Figure:
    fig.update_layout(
        title=title, xaxis_title=x, yaxis_title=y, height=height,
        margin=dict(l=60, r=20, t=50, b=50),
    )
    return fig


def dimension_curves(pe: np.ndarray, dims: list[int]) -> go.Figure:
    """One line per chosen dimension of a [P, D] encoding, across positions."""
    pos = np.arange(pe.shape[0])
    fig = go.Figure([go.Scatter(x=pos, y=pe[:, d], mode="lines", name=f"dim {d}") for d in dims])
    return _layout(fig, "Sinusoidal encoding, chosen dimensions", "position", "value")


def table_heatmap(table: np.ndarray, title: str, first: int = 0) -> go.Figure:
    """A [positions x dimensions] table whose first row is position `first`, earliest at the top.

    Colours saturate at the 99th percentile of |value|, so one outlying row (BERT's position 0)
    does not wash out the rest; hover shows the true value.
    """
    limit = float(np.quantile(np.abs(table), 0.99)) or 1.0
    fig = go.Figure(go.Heatmap(
        z=table.astype(np.float32), y=np.arange(first, first + len(table)),
        colorscale="RdBu", zmin=-limit, zmax=limit,
        hovertemplate="position %{y}<br>dimension %{x}<br>value %{z:.3f}<extra></extra>",
    ))
    fig.update_yaxes(autorange="reversed")
    return _layout(fig, title, "dimension", "position")


def wavelength_plot(wavelengths: np.ndarray) -> go.Figure:
    """Wavelength (in positions) of every dimension, on a log axis: a geometric progression."""
    fig = go.Figure(go.Scatter(x=np.arange(len(wavelengths)), y=wavelengths, mode="markers", marker=dict(size=4)))
    fig.update_yaxes(type="log")
    title = "Wavelength per dimension (2\u03c0 to 10000\u00b72\u03c0)"
    return _layout(fig, title, "dimension", "wavelength (positions)")


def similarity_heatmap(sim: np.ndarray, title: str, colorbar: str, first: int = 0) -> go.Figure:
    """A [P, P] position-to-position similarity (dot product or cosine) starting at position `first`."""
    pos = np.arange(first, first + len(sim))
    fig = go.Figure(go.Heatmap(
        z=sim.astype(np.float32), x=pos, y=pos, colorscale="Viridis", colorbar=dict(title=colorbar),
        hovertemplate="position %{y} vs %{x}<br>%{z:.3f}<extra></extra>",
    ))
    fig.update_yaxes(autorange="reversed")
    return _layout(fig, title, "position", "position")


def offset_plot(offsets: np.ndarray, dots: np.ndarray) -> go.Figure:
    """PE(pos) . PE(pos + k) against k: one curve, because it does not depend on pos."""
    fig = go.Figure(go.Scatter(x=offsets, y=dots, mode="lines"))
    title = "PE(pos)\u00b7PE(pos+k) against k, for any pos"
    return _layout(fig, title, "offset k", "PE(pos)\u00b7PE(pos+k)")


def shift_matrix_heatmap(m: np.ndarray, k: int, shown: int = 16) -> go.Figure:
    """The top-left shown x shown corner of the rotation M_k: 2x2 blocks on the diagonal, zeros elsewhere.

    Only the corner, because at d_model = 128 the blocks are too small to see; the rest repeats it
    at ever lower frequencies (blocks tending to the identity).
    """
    fig = go.Figure(go.Heatmap(
        z=m[:shown, :shown].astype(np.float32), colorscale="RdBu", zmid=0, zmin=-1, zmax=1,
        hovertemplate="row %{y}, column %{x}<br>%{z:.4f}<extra></extra>",
    ))
    fig.update_yaxes(autorange="reversed", scaleanchor="x")
    fig.update_xaxes(constrain="domain")
    title = f"M<sub>{k}</sub>: PE(pos+{k}) = M<sub>{k}</sub> PE(pos), first {min(shown, len(m))} dimensions"
    return _layout(fig, title, "dimension of PE(pos)", "dimension of PE(pos+k)")


def pca_curve(coords: np.ndarray, explained: np.ndarray, title: str, first: int = 0) -> go.Figure:
    """Positions first.. projected on the first two principal components, joined in order, coloured by position."""
    pos = np.arange(first, first + coords.shape[0])
    fig = go.Figure(go.Scatter(
        x=coords[:, 0], y=coords[:, 1], mode="lines+markers", line=dict(color="lightgray"),
        marker=dict(size=5, color=pos, colorscale="Viridis", colorbar=dict(title="position")),
        hovertemplate="position %{text}<extra></extra>", text=pos,
    ))
    return _layout(fig, title, f"PC1 ({explained[0]:.0%} of variance)", f"PC2 ({explained[1]:.0%} of variance)")


def rope_rotation_plot(rotated: np.ndarray, pairs: list[int]) -> go.Figure:
    """One vector rotated by RoPE at positions 0..P-1 [P, D]: each pair (2i, 2i+1) walks a circle."""
    fig = go.Figure()
    for i in pairs:
        xs, ys = rotated[:, 2 * i], rotated[:, 2 * i + 1]
        fig.add_trace(go.Scatter(
            x=xs, y=ys, mode="markers", name=f"pair {i} (dims {2 * i},{2 * i + 1})",
            text=np.arange(len(xs)), hovertemplate="position %{text}<extra></extra>",
        ))
    fig.update_yaxes(scaleanchor="x")
    title = "RoPE turns each pair of q (or k) by position \u00d7 its frequency"
    return _layout(fig, title, "first of pair", "second of pair")


def rope_scores_heatmap(scores: np.ndarray) -> go.Figure:
    """q.k after RoPE with q at position m (rows) and k at n (columns): constant along diagonals."""
    fig = go.Figure(go.Heatmap(
        z=scores.astype(np.float32), colorscale="RdBu", zmid=0,
        hovertemplate="q at %{y}, k at %{x}<br>q\u00b7k = %{z:.3f}<extra></extra>",
    ))
    fig.update_yaxes(autorange="reversed")
    return _layout(fig, "RoPE q\u00b7k for every (query position, key position)", "key position n", "query position m")


def rope_offset_plot(scores: np.ndarray, starts: list[int]) -> go.Figure:
    """q.k against the offset n - m for several query positions m: the curves coincide."""
    fig = go.Figure()
    for m in starts:
        offsets = np.arange(scores.shape[1] - m)
        fig.add_trace(go.Scatter(x=offsets, y=scores[m, m:], mode="lines", name=f"q at {m}"))
    return _layout(fig, "Same offset, same score, wherever q stands", "offset n \u2212 m", "q\u00b7k")


def attention_heatmap(weights: np.ndarray, tokens: list[str], title: str) -> go.Figure:
    """Attention weights [T, T] between tokens; repeated tokens keep their own rows."""
    labels = token_labels(tokens)
    pos = list(range(len(tokens)))
    fig = go.Figure(go.Heatmap(
        z=weights.astype(np.float32), zmin=0, zmax=1, colorscale="Blues",
        text=np.vectorize(lambda v: f"{v:.2f}")(weights), texttemplate="%{text}",
        hovertemplate="query %{y} \u2192 key %{x}<br>weight %{z:.3f}<extra></extra>",
    ))
    fig.update_xaxes(tickvals=pos, ticktext=labels)
    fig.update_yaxes(tickvals=pos, ticktext=labels, autorange="reversed")
    return _layout(fig, title, "key", "query", height=320)

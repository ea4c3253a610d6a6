"""Figures for the vision view: the image cut into patches, and attention over patches painted on it.

Pure functions of arrays; they never run a model. An image is (H, W) grey or (H, W, 3) RGB in
0..`vmax`; an attention map is (rows, cols) over the patches and is drawn at patch resolution on top
of the image (a heatmap whose cells are patch-sized) in a colour that is transparent at 0 and 70 %
opaque at the map's largest weight, so the picture shows through where the head does not look.
"""
from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

OVERLAY = [[0.0, "rgba(255, 69, 0, 0)"], [1.0, "rgba(255, 69, 0, 0.7)"]]  # orange-red, transparent at 0


def _image_trace(image: np.ndarray, vmax: float) -> go.BaseTraceType:
    img = np.asarray(image, dtype=np.float32)
    if img.ndim == 3 and img.shape[-1] == 3:
        return go.Image(z=np.clip(img / vmax * 255, 0, 255).astype(np.uint8), hoverinfo="skip")
    grey = img if img.ndim == 2 else img.mean(-1)
    return go.Heatmap(z=grey, zmin=0, zmax=vmax, colorscale="gray", showscale=False, hoverinfo="skip")


def _axes(fig: go.Figure, h: int, w: int, panel: int = 1) -> None:
    """Panel `panel` (1-based) shows pixels square, the image's first row at the top, no ticks."""
    suffix = "" if panel == 1 else str(panel)
    fig.layout[f"xaxis{suffix}"].update(range=[-0.5, w - 0.5], showticklabels=False, showgrid=False, zeroline=False,
                                         constrain="domain")
    fig.layout[f"yaxis{suffix}"].update(range=[h - 0.5, -0.5], showticklabels=False, showgrid=False, zeroline=False,
                                         scaleanchor=f"x{suffix}", constrain="domain")


def patch_grid(image: np.ndarray, grid: tuple[int, int], vmax: float, title: str = "") -> go.Figure:
    """The image with its patch grid drawn on it and each patch named as its token, r0c0 … (row, column)."""
    h, w = np.asarray(image).shape[:2]
    rows, cols = grid
    ph, pw = h / rows, w / cols
    fig = go.Figure(_image_trace(image, vmax))
    for r in range(1, rows):
        fig.add_shape(type="line", x0=-0.5, x1=w - 0.5, y0=r * ph - 0.5, y1=r * ph - 0.5, line=dict(color="#1f77b4"))
    for c in range(1, cols):
        fig.add_shape(type="line", y0=-0.5, y1=h - 0.5, x0=c * pw - 0.5, x1=c * pw - 0.5, line=dict(color="#1f77b4"))
    if rows * cols <= 64:
        for r in range(rows):
            for c in range(cols):
                fig.add_annotation(x=(c + 0.5) * pw - 0.5, y=(r + 0.5) * ph - 0.5, text=f"r{r}c{c}", showarrow=False,
                                   font=dict(color="#ff7f0e", size=11))
    fig.update_layout(title=html.escape(title), height=360, margin=dict(l=10, r=10, t=40, b=10))
    _axes(fig, h, w)
    return fig


def overlays(image: np.ndarray, maps: np.ndarray, titles: list[str], vmax: float, per_row: int = 4,
             shared_scale: bool = False) -> go.Figure:
    """One panel per map [K, rows, cols]: the image with that attention over its patches (hover: token, weight)."""
    img = np.asarray(image)
    h, w = img.shape[:2]
    k, rows, cols = maps.shape
    n_rows = -(-k // per_row)
    fig = make_subplots(rows=n_rows, cols=min(k, per_row), subplot_titles=[html.escape(t) for t in titles],
                        horizontal_spacing=0.02, vertical_spacing=0.08)
    names = np.array([[f"r{r}c{c}" for c in range(cols)] for r in range(rows)])
    top = float(maps.max()) if shared_scale else None
    for i, m in enumerate(maps):
        where = dict(row=i // per_row + 1, col=i % per_row + 1)
        fig.add_trace(_image_trace(img, vmax), **where)
        fig.add_trace(go.Heatmap(z=m, x0=(w / cols - 1) / 2, dx=w / cols, y0=(h / rows - 1) / 2, dy=h / rows,
                                 zmin=0, zmax=top or float(m.max()) or 1.0, colorscale=OVERLAY,
                                 showscale=shared_scale and i == 0, customdata=names,
                                 colorbar=dict(title="weight", thickness=10, len=0.8),
                                 hovertemplate="%{customdata}: %{z:.3f}<extra></extra>"), **where)
        _axes(fig, h, w, i + 1)
    fig.update_layout(height=230 * n_rows + 60, margin=dict(l=10, r=10, t=50, b=10))
    return fig

"""Figures for the vision view: the image cut into patches, and attention over patches painted on it.

Pure functions of arrays; they never run a model. An image is (H, W) grey or (H, W, 3) RGB in
0..`vmax`; an attention map is (rows, cols) over the patches and is drawn at patch resolution on top
of the image (a heatmap whose cells are patch-sized) in a colour that is transparent at 0 and 70 %
opaque at the map's largest weight, so the picture shows through where the head does not look.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz.common import escape

OVERLAY = [[0.0, "rgba(255, 69, 0, 0)"], [1.0, "rgba(255, 69, 0, 0.7)"]]  # orange-red, transparent at 0


def _image_trace(image: np.ndarray, vmax: float) -> go.BaseTraceType:
    img = np.asarray(image, dtype=np.float32)
    if img.ndim == 3 and img.shape[-1] == 3:
        return go.Image(z=np.clip(img / vmax * 255, 0, 255).astype(np.uint8), hoverinfo="skip")
    grey = img if img.ndim == 2 else img.mean(-1)
    return go.Heatmap(z=grey, zmin=0, zmax=vmax, colorscale="gray", showscale=False, hoverinfo="skip")


PATCH_TICKS = 8  # coordinates labelled along each side of a picture at most; hover names every patch


def _coords(n: int, size: float, letter: str) -> dict:
    """Tick positions at the centres of n patches of `size` pixels, labelled c0, c1, ... (every s-th past
    PATCH_TICKS): 4, 2.0, 'c' -> ticks at 0.5, 2.5, 4.5, 6.5 named c0 … c3."""
    shown = range(0, n, -(-n // PATCH_TICKS))
    return {"tickvals": [(i + 0.5) * size - 0.5 for i in shown], "ticktext": [f"{letter}{i}" for i in shown]}


def _axes(fig: go.Figure, h: int, w: int, grid: tuple[int, int], panel: int = 1, row_labels: bool = True) -> None:
    """Panel `panel` (1-based) shows pixels square, the image's first row at the top, and the patches' row and
    column numbers on its axes (r0 … down the side, c0 … along the bottom), as the tokens r0c0 … name them.
    row_labels=False leaves the side unlabelled (a panel right of another in the same row)."""
    suffix = "" if panel == 1 else str(panel)
    rows, cols = grid
    fig.layout[f"xaxis{suffix}"].update(range=[-0.5, w - 0.5], showgrid=False, zeroline=False, constrain="domain",
                                         tickfont=dict(size=10), ticks="", **_coords(cols, w / cols, "c"))
    fig.layout[f"yaxis{suffix}"].update(range=[h - 0.5, -0.5], showgrid=False, zeroline=False, constrain="domain",
                                         scaleanchor=f"x{suffix}", tickfont=dict(size=10), ticks="",
                                         showticklabels=row_labels, **_coords(rows, h / rows, "r"))


def _names(rows: int, cols: int) -> np.ndarray:
    """(rows, cols) of the patch tokens' names, r0c0 …"""
    return np.array([[f"r{r}c{c}" for c in range(cols)] for r in range(rows)])


def patch_grid(image: np.ndarray, grid: tuple[int, int], vmax: float, title: str = "") -> go.Figure:
    """The image with its patch grid drawn on it; the axes number the patches' rows and columns and hovering
    a patch names its token, r1c2 (row 1, column 2)."""
    h, w = np.asarray(image).shape[:2]
    rows, cols = grid
    ph, pw = h / rows, w / cols
    fig = go.Figure(_image_trace(image, vmax))
    clear = [[0, "rgba(0, 0, 0, 0)"], [1, "rgba(0, 0, 0, 0)"]]  # an invisible layer, there for its hover
    fig.add_trace(go.Heatmap(z=np.zeros(grid), x0=(pw - 1) / 2, dx=pw, y0=(ph - 1) / 2, dy=ph, showscale=False,
                             colorscale=clear, customdata=_names(rows, cols),
                             hovertemplate="patch %{customdata}<extra></extra>"))
    for r in range(1, rows):
        fig.add_shape(type="line", x0=-0.5, x1=w - 0.5, y0=r * ph - 0.5, y1=r * ph - 0.5, line=dict(color="#1f77b4"))
    for c in range(1, cols):
        fig.add_shape(type="line", y0=-0.5, y1=h - 0.5, x0=c * pw - 0.5, x1=c * pw - 0.5, line=dict(color="#1f77b4"))
    fig.update_layout(title=escape(title), height=360, margin=dict(l=10, r=10, t=40, b=10))
    _axes(fig, h, w, grid)
    return fig


def overlays(image: np.ndarray, maps: np.ndarray, titles: list[str], vmax: float, per_row: int = 4,
             shared_scale: bool = False) -> go.Figure:
    """One panel per map [K, rows, cols]: the image with that attention over its patches (hover: token, weight)."""
    img = np.asarray(image)
    h, w = img.shape[:2]
    k, rows, cols = maps.shape
    n_rows = -(-k // per_row)
    fig = make_subplots(rows=n_rows, cols=min(k, per_row), subplot_titles=[escape(t) for t in titles],
                        horizontal_spacing=0.02, vertical_spacing=0.08)
    names = _names(rows, cols)
    top = float(maps.max()) if shared_scale else None
    for i, m in enumerate(maps):
        where = dict(row=i // per_row + 1, col=i % per_row + 1)
        fig.add_trace(_image_trace(img, vmax), **where)
        fig.add_trace(go.Heatmap(z=m, x0=(w / cols - 1) / 2, dx=w / cols, y0=(h / rows - 1) / 2, dy=h / rows,
                                 zmin=0, zmax=top or float(m.max()) or 1.0, colorscale=OVERLAY,
                                 showscale=shared_scale and i == 0, customdata=names,
                                 colorbar=dict(title="weight", thickness=10, len=0.8),
                                 hovertemplate="%{customdata}: %{z:.3f}<extra></extra>"), **where)
        _axes(fig, h, w, (rows, cols), i + 1, row_labels=i % per_row == 0)
    fig.update_layout(height=230 * n_rows + 60, margin=dict(l=10, r=10, t=50, b=10))
    return fig

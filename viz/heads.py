"""Attention heatmaps: every layer × head at a glance, and one head large (the Heads view's figures).

Shared: Induction marks its heads on the same grid, Corpus (ui.corpus) draws one chosen head, Pruning
(ui.pruning) the grid of importances, and the printed lesson and api.figures draw both; tests/test_view_names.py
lists those views as its allowed importers.

Figures only: takes arrays and token lists, never runs a model. The overview is one heatmap of all heads
tiled with thin white gaps, holding whole percents as uint8 (what the eye can see at that size). A head's
tile is at most TILE cells a side (fewer when the model has more than MiniLM's 72 heads, so that the page holds
about as many cells as MiniLM's: 16 a side for 32 × 32 heads): a longer text is max-pooled into blocks of tokens
(a thin diagonal or one strong key stays visible), so the figure stays under ~1 MB at any length and any head
count (26 MB at 512 tokens without it; 11.7 MB for 1,024 heads at 64 a side) and paints as one canvas image;
the one-head figure shows a head at full resolution.
Hover says which head, which tokens and the weight; a click on a tile is a selection event whose point
names its layer and head (`clicked_head`).
"""
from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from analysis.tokens import readable_all
from viz.common import COLORSCALE, click_targets, escape, token_labels
from viz.describe import heads_table, strongest_heads

GAP = 101   # cell value of the white gap between heads; real cells hold 0..100
TILE = 64   # most cells a head's tile has per side; longer texts are pooled into blocks of tokens
CELLS = 72 * TILE * TILE  # the overview's cell budget: MiniLM's 6 × 12 heads at TILE a side
MIN_TILE = 8


def tile_side(n_tiles: int) -> int:
    """Most cells a side of one head's tile when the overview shows n_tiles heads: 72 -> 64, 1024 -> 16."""
    return max(MIN_TILE, min(TILE, math.isqrt(CELLS // max(1, n_tiles))))


def layers_that_fit(n_layers: int, n_heads: int) -> int:
    """How many layers the overview draws at once within CELLS at MIN_TILE cells a side: every layer up to
    4,608 heads. (32, 32) -> 32, (80, 64) -> 72"""
    return max(1, min(n_layers, CELLS // (max(1, n_heads) * MIN_TILE * MIN_TILE)))


def pool(weights: np.ndarray, size: int = TILE) -> tuple[np.ndarray, int]:
    """[L, H, Tq, Tk] -> ([L, H, ceil(Tq/f), ceil(Tk/f)] block maxima, f) with f = ceil(max(Tq, Tk) / size)."""
    tq, tk = weights.shape[2:]
    f = max(1, math.ceil(max(tq, tk) / size))
    if f == 1:
        return weights, 1
    nq, nk = math.ceil(tq / f), math.ceil(tk / f)
    padded = weights
    if (nq * f, nk * f) != (tq, tk):  # a partial last block: pad with zeros (whole blocks need no copy)
        padded = np.zeros(weights.shape[:2] + (nq * f, nk * f), weights.dtype)
        padded[:, :, :tq, :tk] = weights
    # rows of a block first (an elementwise maximum of whole contiguous rows), then columns of the much smaller
    # result: 3x faster than one max over both axes at once, which strides through 1 GiB for 1,024 heads at 512
    rows = padded.reshape(*weights.shape[:2], nq, f, nk * f).max(axis=3)       # (L, H, nq, nk * f)
    return rows.reshape(*weights.shape[:2], nq, nk, f).max(axis=4), f           # (L, H, nq, nk)


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


def _block_labels(tokens: list[str], f: int) -> list[str]:
    """Token labels of each block of f tokens: ['bank (3)'] when f == 1, else ['the … bank (0–7)', ...]."""
    toks = [escape(t or "∅") for t in readable_all(tokens)]  # the position in brackets tells repeats apart
    if f == 1:
        return [f"{t} ({i})" for i, t in enumerate(toks)]
    return [f"{toks[i]} … {toks[min(i + f, len(toks)) - 1]} ({i}–{min(i + f, len(toks)) - 1})"
            for i in range(0, len(toks), f)]


def overview_alt(pooled: np.ndarray, f: int, tokens: list[str], key_tokens: list[str], first_layer: int = 0) -> str:
    """The overview in words, for a screen reader: its size and strongest heads, read from the tiles it draws
    (viz.describe.strongest_heads; a pooled block's weight is its largest)."""
    return strongest_heads(pooled, _block_labels(tokens, f), _block_labels(key_tokens, f), first_layer)


def overview_table(pooled: np.ndarray, f: int, tokens: list[str], key_tokens: list[str], first_layer: int = 0):
    """The overview as a table, a row per head (viz.describe.heads_table), read from the tiles it draws."""
    return heads_table(pooled, _block_labels(tokens, f), _block_labels(key_tokens, f), first_layer)


def _axis_labels(prefix: str, count: int, blocks: list[str], first: int = 0) -> list[str]:
    """Unique category labels for a tiled axis: 'L2 · bank (3)', and invisible distinct ones for the gaps."""
    labels = []
    for b in range(count):
        labels += [f"{prefix}{first + b} · {t}" for t in blocks]
        labels.append("\u200b" * (b + 1))
    return labels


def clicked_head(point: dict) -> tuple[int, int] | None:
    """(layer, head) of a clicked overview cell from its selection point ({'x': 'H5 · …', 'y': 'L2 · …'})."""
    x, y = str(point.get("x", "")), str(point.get("y", ""))
    if not (x.startswith("H") and y.startswith("L") and " · " in x and " · " in y):
        return None  # a gap between tiles
    return int(y[1:y.index(" · ")]), int(x[1:x.index(" · ")])


def overview(weights: np.ndarray, tokens: list[str], key_tokens: list[str], shared_scale: bool = False,
             first_layer: int = 0) -> go.Figure:
    """All heads, one row per layer and one column per head, labelled L0.. and H0... weights: [L, H, Tq, Tk]
    (layers first_layer, first_layer + 1, ... of the model when it draws a slice: layers_that_fit)."""
    return overview_of(*overview_pool(weights), tokens, key_tokens, shared_scale, first_layer)


def overview_pool(weights: np.ndarray, n_tiles: int | None = None) -> tuple[np.ndarray, int]:
    """The overview's tiles before drawing: [L, H, Tq, Tk] -> ([L, H, nq, nk] block maxima, block size f), at
    tile_side(n_tiles) cells a side (n_tiles: the overview's heads when weights are a part of them, e.g. one layer;
    by default L * H). The one step that reads every weight (1 GiB for 1,024 heads at 512 tokens): a server keeps
    its result (views/heads.py), so a rerun or a second visit draws without reading them again."""
    return pool(weights, tile_side(n_tiles or weights.shape[0] * weights.shape[1]))


def overview_of(pooled: np.ndarray, f: int, tokens: list[str], key_tokens: list[str], shared_scale: bool = False,
                first_layer: int = 0) -> go.Figure:
    """overview() of tiles already pooled by overview_pool (pooled [L, H, nq, nk], f tokens a block); reads
    pooled only, never changes it."""
    n_layers, n_heads, nq, nk = pooled.shape
    z = tile(pooled, shared_scale)                                    # colour
    x = _axis_labels("H", n_heads, _block_labels(key_tokens, f))
    y = _axis_labels("L", n_layers, _block_labels(tokens, f), first_layer)
    scale = [[i / 8 * 100 / GAP, c] for i, c in enumerate(_viridis9())] + [[100.5 / GAP, "white"], [1.0, "white"]]
    legend = "weight" if shared_scale else "weight ÷ the<br>head's largest"
    fig = go.Figure(go.Heatmap(
        z=z, x=x, y=y, zmin=0, zmax=GAP, colorscale=scale,
        colorbar=dict(title=dict(text=legend, side="top"), tickvals=[0, 25, 50, 75, 100], len=0.8,
                      ticktext=["0", "0.25", "0.5", "0.75", "1"] if shared_scale else ["0", "¼", "½", "¾", "max"]),
    ))
    height = min(900, max(300, 110 * n_layers))
    fig.update_xaxes(type="category", tickmode="array", tickvals=[x[h * (nk + 1) + nk // 2] for h in range(n_heads)],
                     ticktext=[f"H{h}" for h in range(n_heads)], side="top", showgrid=False, title="head")
    fig.update_yaxes(type="category", tickmode="array", tickvals=[y[l * (nq + 1) + nq // 2] for l in range(n_layers)],
                     ticktext=[f"L{first_layer + l}" for l in range(n_layers)], autorange="reversed", showgrid=False,
                     title="layer")
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=40, b=10), plot_bgcolor="white")
    # a click on a tile opens its head: one target a head, at the tile's centre, hovered with its strongest weight
    centres = [(l, h, y[l * (nq + 1) + nq // 2], x[h * (nk + 1) + nk // 2]) for l in range(n_layers)
               for h in range(n_heads)]
    q_blocks, k_blocks = _block_labels(tokens, f), _block_labels(key_tokens, f)
    hover = []
    for l, h, _, _ in centres:
        i, j = np.unravel_index(int(np.argmax(pooled[l, h])), (nq, nk))
        hover.append(f"L{first_layer + l} H{h}: largest weight {100 * float(pooled[l, h, i, j]):.0f}%, query "
                     f"{q_blocks[i]} on key {k_blocks[j]}<br>click to open this head below")
    tile_px = min((height - 50) / n_layers, 740 / n_heads)  # a tile's side on a page ~900 px wide, at most
    return click_targets(fig, [c[3] for c in centres], [c[2] for c in centres], None, hover, 0.8 * tile_px)


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

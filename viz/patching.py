"""Figures for activation patching: how much of the logit difference each head, or each layer × position, restores.

Figures only: takes score tables from experiments.patching, never runs a model. Squares (a scatter, not a heatmap)
so that a click selects one cell; colour is diverging around 0 (blue restores the clean answer, red pushes further
towards the corrupted one), fixed to [-1, 1] so two runs compare.
"""
from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from viz.common import escape, head_grid_layout, text_on_diverging, token_labels

DIVERGING = "RdBu"


def _top(values: np.ndarray) -> float:
    """The colour scale's end: the largest |value|, at least 1."""
    return max(1.0, float(np.nanmax(np.abs(values))) if np.isfinite(values).any() else 1.0)


def _marker(values: np.ndarray, title: str, size: int) -> dict:
    top = _top(values)
    return dict(symbol="square", size=size, color=np.nan_to_num(values, nan=0.0), colorscale=DIVERGING,
                cmin=-top, cmax=top, colorbar=dict(title=dict(text=title), thickness=12))


def row_label(row: str) -> str:
    """A row of patching scores as every view names a layer: "layer 3" -> "L3"; an encoder-decoder's rows ("decoder 1
    cross") keep their name."""
    return f"L{row.removeprefix('layer ')}" if row.startswith("layer ") else row


def heads_figure(scores: np.ndarray, rows: list[str], metric: str) -> go.Figure:
    """Rows are attention layers (named by `rows`, shown by row_label), columns heads; colour = restored fraction
    (blank: no such head after pruning). Each point's customdata is [row, head]."""
    rows = [row_label(r) for r in rows]
    n_rows, n_heads = scores.shape
    row, head = np.divmod(np.arange(n_rows * n_heads), n_heads)
    values = np.asarray(scores, dtype=np.float64).ravel()
    hover = [f"{escape(rows[r])}, head {h}<br>restores " + ("no such head" if np.isnan(v) else f"{v:+.3f}")
             + f" of the {escape(metric)}<br>click to look inside this head" for r, h, v in zip(row, head, values)]
    fig = go.Figure(go.Scatter(
        x=head, y=row, mode="markers+text", hovertext=hover, hoverinfo="text",
        text=[("" if np.isnan(v) else f"{v:.2f}") for v in values],
        textfont=dict(size=11, color=text_on_diverging(np.nan_to_num(values), _top(values))),
        customdata=np.stack([row, head], 1), marker=_marker(values, "restored", 34)))
    head_grid_layout(fig, n_rows, n_heads)
    fig.update_layout(title=dict(text="Each head patched, clean → corrupted",
                                 font=dict(size=14)), yaxis_title="layer", margin=dict(l=10, r=10, t=70, b=10))
    fig.update_yaxes(ticktext=rows)
    return fig


MAX_TICKS = 40  # position labels one figure's axis holds apart, tilted


def positions_figure(scores: np.ndarray, rows: list[str], tokens: list[str], corrupt_tokens: list[str]) -> go.Figure:
    """Rows are layers (the residual stream entering each; shown by row_label), columns token positions; customdata
    is [layer, pos]."""
    rows = [row_label(r) for r in rows]
    n_rows, n_pos = scores.shape
    row, pos = np.divmod(np.arange(n_rows * n_pos), n_pos)
    values = np.asarray(scores, dtype=np.float64).ravel()
    names = token_labels(tokens)
    changed = [a != b for a, b in zip(tokens, corrupt_tokens)]
    ticks = [f"<b>{n}</b>" if c else n for n, c in zip(names, changed)]  # tokens that differ in bold
    stride = -(-n_pos // MAX_TICKS)  # past MAX_TICKS positions: labels stride apart, those that differ first
    shown = _labelled(changed, stride)
    others = token_labels(corrupt_tokens)
    hover = [f"{escape(rows[r])}, position {p} ({names[p]}" + (f" / corrupted {others[p]}" if changed[p] else "")
             + f")<br>restores {v:+.3f}"
             "<br>click to look inside this layer's heads" for r, p, v in zip(row, pos, values)]
    fig = go.Figure(go.Scatter(
        x=pos, y=row, mode="markers", hovertext=hover, hoverinfo="text", customdata=np.stack([row, pos], 1),
        marker=_marker(values, "restored", max(10, min(30, 600 // max(n_pos, 1))))))
    fig.update_layout(
        title=dict(text="The residual stream entering each layer, patched at one position", font=dict(size=14)),
        showlegend=False, height=max(230, 140 + 34 * n_rows) + (50 if _angle(names) else 0),  # + tilted labels
        margin=dict(l=10, r=10, t=60, b=10), clickmode="event+select",
        xaxis=dict(title="position (tokens that differ in bold)" + (f"; one in {stride} labelled" if stride > 1
                                                                      else ""),
                   tickvals=shown, ticktext=[ticks[p] for p in shown], tickangle=_angle([names[p] for p in shown]),
                   range=[-0.6, n_pos - 0.4], showgrid=False, zeroline=False),
        yaxis=dict(title="layer", tickvals=list(range(n_rows)), ticktext=rows, range=[n_rows - 0.4, -0.6],
                   showgrid=False, zeroline=False))
    return fig


def _labelled(changed: list[bool], stride: int) -> list[int]:
    """The positions to label, never two closer than `stride`: those that differ first (of a run of them, its first
    and then every stride-th), then every stride-th position not too close to one of those.
    ([F, F, T, T, T, F, F, F], 2) -> [0, 2, 4, 6]: 2 and 4 differ (3 is too close to 2), then 0 and 6."""
    kept: list[int] = []
    for p in (p for p, c in enumerate(changed) if c):
        if not kept or p - kept[-1] >= stride:
            kept.append(p)
    first = list(kept)
    kept += [p for p in range(0, len(changed), stride) if all(abs(p - q) >= stride for q in first)]
    return sorted(kept)


def _angle(names: list[str]) -> int:
    """Upright tick labels while they fit side by side (about 48 characters' worth of columns), else tilted:
    '␣return' beside '␣name' in 10 columns runs together upright."""
    widest = max((len(html.unescape(n)) for n in names), default=1)
    return 0 if len(names) * widest <= 48 else (-45 if len(names) <= 12 else -60)


def versus_figure(patched: np.ndarray, gradient: np.ndarray, rows: list[str],
                  gradient_title: str = "|∂ logit difference / ∂ξ|") -> go.Figure:
    """One point per head: its patching score (x) against its gradient importance (y: for the same metric, or, as
    `gradient_title` says, for another loss such as the Pruning view's task)."""
    row, head = np.nonzero(np.isfinite(patched) & np.isfinite(gradient))
    hover = [f"{escape(rows[r])}, head {h}<br>patching {patched[r, h]:+.3f}<br>|gradient| {gradient[r, h]:.3f}"
             for r, h in zip(row, head)]
    fig = go.Figure(go.Scatter(x=patched[row, head], y=gradient[row, head], mode="markers", hovertext=hover,
                               hoverinfo="text", marker=dict(size=9, color=row, colorscale="Viridis",
                                                             colorbar=dict(title=dict(text="layer"), thickness=12))))
    fig.update_layout(title=dict(text="Patching score against gradient importance, per head", font=dict(size=14)),
                      xaxis_title="patching score (fraction restored)", yaxis_title=gradient_title,
                      height=320, margin=dict(l=10, r=10, t=50, b=10), showlegend=False)
    return fig

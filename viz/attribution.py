"""Figures of the attribution view: token strips per method, deletion curves, Kendall tau, heads against IG.

    strips({"occlusion": a, ...}, LABELS) -> one row of token colours per method, each divided by its largest
                                             |score| over ordinary tokens, so every row shares the -1..1 scale
Pure plotly; never runs a model. Special tokens ([CLS], [SEP], <s>) are left blank: no method ranks them.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz.common import DIVERGING as COMMON_DIVERGING
from viz.common import head_grid_layout, text_on_diverging, token_labels
from viz.describe import plain

DIVERGING = COMMON_DIVERGING  # negative red, positive blue, as every view


def normalised(scores: np.ndarray, special: np.ndarray) -> np.ndarray:
    """scores / max |score| over ordinary tokens, NaN at special tokens. ([2, -1, 4], [1, 0, 0]) -> [nan, -.25, 1]"""
    top = np.abs(scores[~special]).max() if (~special).any() else 0.0
    out = scores / top if top > 0 else np.zeros_like(scores, dtype=float)
    return np.where(special, np.nan, out)


def strips(atts: dict, labels: dict[str, str]) -> go.Figure:
    """One strip of token colours per method (rows), on the same -1..1 scale; hover: the raw score."""
    first = next(iter(atts.values()))
    names = list(atts)
    z = np.array([normalised(a.scores, a.special) for a in atts.values()])                       # (M, T)
    raw = np.array([a.scores for a in atts.values()])                                             # (M, T)
    x = token_labels(first.tokens)
    rows = [labels.get(m, m) + (f" (L{atts[m].head[0]} H{atts[m].head[1]})" if atts[m].head else "") for m in names]
    fig = go.Figure(go.Heatmap(
        z=z, x=x, y=rows, customdata=raw, zmin=-1, zmax=1, zmid=0, colorscale=DIVERGING, xgap=2, ygap=2,
        colorbar=dict(title=dict(text="share of<br>the row's<br>largest |score|", side="right")),
        hovertemplate="%{y}<br>token %{x}<br>score %{customdata:.4g}<br>of the row's largest: %{z:.2f}<extra></extra>",
    ))
    fig.update_layout(height=130 + 34 * len(names), margin=dict(l=10, r=10, t=40, b=10),
                      title=f"What each method credits for: {first.target}",  # tokens below: long ones tilt away
                      xaxis=dict(title="token (blank: special, never removed)", side="bottom", type="category",
                                 automargin=True),
                      yaxis=dict(title="method", autorange="reversed", type="category"))
    return fig


def strips_table(atts: dict, labels: dict[str, str], digits: int = 4):
    """The strips' numbers as a table: a row per token, a column per method, each the method's raw score (the
    strip shows it as a share of the row's largest |score|). A pandas DataFrame."""
    import pandas as pd

    first = next(iter(atts.values()))
    columns = {labels.get(m, m) + (f" (L{a.head[0]} H{a.head[1]})" if a.head else ""): np.round(a.scores, digits)
               for m, a in atts.items()}
    return pd.DataFrame(columns, index=[plain(t) for t in token_labels(first.tokens)])


def curves(curves_: dict[str, dict[str, list[float]]], fractions, labels: dict[str, str], value: str) -> go.Figure:
    """Comprehensiveness and sufficiency against the share of tokens removed or kept, per method; random dashed."""
    fig = make_subplots(1, 2, subplot_titles=("Comprehensiveness: top tokens deleted (higher is better)",
                                              "Sufficiency: only top tokens kept (lower is better)"))
    pct = [100 * f for f in fractions]
    for i, (m, c) in enumerate(curves_.items()):
        dash = "dash" if m == "random" else "solid"
        for col, kind in ((1, "comprehensiveness"), (2, "sufficiency")):
            fig.add_trace(go.Scatter(x=pct, y=c[kind], name=labels.get(m, m), legendgroup=m, showlegend=col == 1,
                                     mode="lines+markers", line=dict(dash=dash, color=_colour(i)),
                                     hovertemplate=f"{labels.get(m, m)}<br>%{{x:.0f}} % of tokens<br>{kind} "
                                                   "%{y:.4f}<extra></extra>"), 1, col)
    fig.update_xaxes(title_text="top tokens by the method (% of ordinary tokens)", type="log", tickvals=pct,
                     ticktext=[f"{p:g} %" for p in pct])  # the measured shares, not log ticks' 1 2 5 10 2 5
    fig.update_yaxes(title_text=f"drop in {value}", col=1)
    fig.update_yaxes(title_text=f"drop in {value}", col=2)
    fig.update_layout(height=420, margin=dict(l=10, r=10, t=60, b=10), legend=dict(orientation="h", y=-0.25))
    return fig


def _colour(i: int) -> str:
    import plotly.express as px

    palette = px.colors.qualitative.D3
    return palette[i % len(palette)]


def tau_matrix(tau: np.ndarray, names: list[str], labels: dict[str, str], title: str) -> go.Figure:
    """Kendall tau between every pair of methods, -1..1."""
    shown = [labels.get(m, m) for m in names]
    fig = go.Figure(go.Heatmap(z=tau, x=shown, y=shown, zmin=-1, zmax=1, zmid=0, colorscale=DIVERGING,
                               text=np.round(tau, 2), texttemplate="%{text}", textfont=dict(size=14),
                               colorbar=dict(title=dict(text="Kendall τ", side="right")),
                               hovertemplate="%{y} vs %{x}<br>τ = %{z:.3f}<extra></extra>"))
    fig.update_layout(title=title, height=max(380, 140 + 56 * len(names)), margin=dict(l=10, r=10, t=50, b=10),
                      xaxis=dict(title="method", type="category"),
                      yaxis=dict(title="method", autorange="reversed", type="category"))
    return fig


def head_agreement(rho: np.ndarray, rows: int) -> go.Figure:
    """Each head's mean Spearman correlation with integrated gradients, one clickable square per head."""
    n_layers, n_heads = rho.shape
    ls, hs = np.meshgrid(range(n_layers), range(n_heads), indexing="ij")
    fig = go.Figure(go.Scatter(
        x=hs.ravel(), y=ls.ravel(), mode="markers+text", text=[f"{v:.2f}" for v in rho.ravel()],
        textfont=dict(size=11, color=text_on_diverging(rho.ravel(), 1.0)),
        customdata=np.stack([ls.ravel(), hs.ravel()], 1),
        marker=dict(symbol="square", size=34, color=rho.ravel(), cmin=-1, cmax=1, colorscale=DIVERGING,
                    colorbar=dict(title=dict(text="Spearman ρ<br>with IG", side="right"))),
        hovertemplate="L%{y} H%{x}<br>ρ = %{marker.color:.3f} (mean over " + str(rows) + " rows)<br>"
                      "click: open in the Heads view<extra></extra>"))
    head_grid_layout(fig, n_layers, n_heads)
    fig.update_layout(title="Which heads agree with the gradients (attention row vs integrated gradients)",
                      margin=dict(l=10, r=10, t=70, b=10))
    fig.update_xaxes(title_text="head")
    fig.update_yaxes(title_text="layer")
    return fig

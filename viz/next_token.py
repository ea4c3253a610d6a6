"""Figures of the Next token view: the residual stream's norm along one token's path, probabilities before and after
each filter, the logit lens, direct logit attribution (ranked bars, layer × head).
Pure plotly from arrays; runs no model."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from analysis.tokens import readable
from viz.common import COLORSCALE, LOWERS, RAISES, click_targets, escape

FILTERS = {"softmax": "softmax(logits)", "temperature": "÷ temperature", "top-k": "+ top-k",
           "top-p": "+ top-p (what is sampled)"}
_SEQ = ("#c7c7c7", "#9ecae1", "#4292c6", "#08306b")


def _t(token: str) -> str:
    return escape(readable(token) or "∅")


def path_figure(stages: list[tuple[str, float]]) -> go.Figure:
    """‖residual‖ after each stage at the last position: embed, L0 attention, L0 MLP, ..."""
    names, norms = [s for s, _ in stages], [n for _, n in stages]
    other = [s.startswith("before") for s in names]  # a hybrid's layers without attention before its first that does
    colors = ["#7f7f7f" if s == "embed" or o else "#1f77b4" if s.endswith("attention") else "#ff7f0e"
              for s, o in zip(names, other, strict=True)]
    fig = go.Figure(go.Bar(x=names, y=norms, marker_color=colors,
                           marker_pattern_shape=["/" if o else "" for o in other],
                           hovertemplate="after %{x}<br>‖residual‖ = %{y:.3f}<extra></extra>"))
    legend = ("grey: embedding, striped grey: the layers without attention before the first that attends, blue: "
              "attention added, orange: MLP added, with the layers without attention after it" if any(other) else
              "grey: embedding, blue: attention added, orange: MLP added")
    fig.update_layout(title="One token's path: the residual stream's norm after each stage (last position)",
                      xaxis_title=f"stage ({legend})", yaxis_title="‖residual‖₂", height=340, margin=dict(t=50, b=10))
    return fig


def writes_figure(writes: np.ndarray) -> go.Figure:
    """Per layer, the norm of what each head and the MLP add to the residual at the last position: writes (L, H + 1)."""
    L, H1 = writes.shape
    names = [f"H{h}" for h in range(H1 - 1)] + ["MLP"]
    fig = go.Figure([go.Bar(name=n, x=[f"L{l}" for l in range(L)], y=writes[:, i],
                            marker_color="#ff7f0e" if n == "MLP" else None,
                            hovertemplate=f"%{{x}} {n}: ‖write‖ = %{{y:.3f}}<extra></extra>")
                     for i, n in enumerate(names)])
    fig.update_layout(barmode="group", title="What each head and each MLP adds to the residual (its norm)",
                      xaxis_title="layer", yaxis_title="‖output‖₂", height=320, margin=dict(t=50, b=10),
                      legend=dict(orientation="h", y=1.0, yanchor="bottom", x=0))
    return fig


def probs_figure(tokens: list[str], stages: dict[str, np.ndarray]) -> go.Figure:
    """Grouped bars: each of the top tokens' probability after each filter (stages: experiments.next_token.stages)."""
    labels = [f"{_t(t)} ·{i}" if [_t(x) for x in tokens].count(_t(t)) > 1 else _t(t) for i, t in enumerate(tokens)]
    fig = go.Figure([go.Bar(name=FILTERS[k], x=labels, y=stages[k], marker_color=c,
                            hovertemplate=f"%{{x}}<br>{FILTERS[k]}: %{{y:.4f}}<extra></extra>")
                     for k, c in zip(FILTERS, _SEQ)])
    fig.update_layout(barmode="group", title="Next-token probability before and after each filter",
                      xaxis_title="token (ordered by logit)", yaxis_title="probability",
                      yaxis_range=[0, min(1.02, 1.15 * max(float(np.max(stages[k])) for k in FILTERS))],
                      legend=dict(orientation="h", y=1.0, yanchor="bottom", x=0), height=380, margin=dict(t=80, b=10))
    return fig


def lens_figure(lens: list[list[tuple[str, float]]], target: str, target_probs: list[float]) -> go.Figure:
    """Layer × rank: the top tokens read from the residual after each layer, coloured by probability."""
    L = len(lens)
    z = np.array([[p for _, p in row] for row in lens])                  # (L, 5)
    text = [[_t(t) for t, _ in row] for row in lens]
    ys = [f"after L{i} · {_t(target)} {100 * p:.1f}%" for i, p in enumerate(target_probs)]
    fig = go.Figure(go.Heatmap(z=z, x=[f"#{r + 1}" for r in range(z.shape[1])], y=ys, text=text,
                               texttemplate="%{text}<br>%{z:.2f}", colorscale=COLORSCALE, zmin=0, zmax=1,
                               colorbar_title="prob.",
                               hovertemplate="%{y}<br>rank %{x}: %{text} (%{z:.4f})<extra></extra>"))
    fig.update_layout(title=f"Logit lens: top tokens read after each layer (row label: P('{_t(target)}'))",
                      xaxis_title="rank", yaxis_title="residual stream after layer", yaxis_autorange="reversed",
                      height=120 + 48 * L, margin=dict(t=50, b=10))
    return fig


def dla_bars(parts: dict[str, float], target: str, n: int = 16) -> go.Figure:
    """The n parts with the largest |share| of the target's logit, ranked."""
    ranked = sorted(parts.items(), key=lambda kv: -abs(kv[1]))[:n][::-1]
    fig = go.Figure(go.Bar(x=[v for _, v in ranked], y=[k for k, _ in ranked], orientation="h",
                           name="share of the logit", marker_color=[RAISES if v > 0 else LOWERS for _, v in ranked],
                           hovertemplate="%{y}: %{x:+.4f} of the logit<extra></extra>"))
    fig.update_layout(title=f"Direct logit attribution of '{_t(target)}': largest parts",
                      xaxis_title="logit units: blue raises it, orange lowers it",  # short: a half-width column
                      yaxis_title="part",
                      height=120 + 22 * len(ranked), margin=dict(t=50, b=10))
    return fig


def dla_heatmap(heads: np.ndarray, target: str) -> go.Figure:
    """Layer × head: each head's direct share of the target's logit (click a cell to open that head)."""
    L, H = heads.shape
    m = float(np.abs(heads).max()) if heads.size and np.isfinite(heads).all() else 0.0
    m = m or 1.0  # all zero (or, never from the split, not finite): one scale
    digits = max(2, 1 - int(np.floor(np.log10(m))))  # the largest share keeps two significant digits: 0.0012, 0.071
    fig = go.Figure(go.Heatmap(z=heads, x=[f"H{h}" for h in range(H)], y=[f"L{l}" for l in range(L)],
                               colorscale="RdBu", zmid=0, zmin=-m, zmax=m, colorbar_title="logit<br>units",
                               texttemplate=f"%{{z:+.{digits}f}}" if L * H <= 256 else None))
    fig.update_layout(title=f"Each head's direct share of the logit of '{_t(target)}'",
                      xaxis_title="head", yaxis_title="layer", yaxis_autorange="reversed",
                      height=max(240, 140 + 40 * L), margin=dict(t=50, b=10))  # room for the colour bar
    cells = [(l, h) for l in range(L) for h in range(H)]  # a click on a cell picks its head: customdata [l, h]
    return click_targets(fig, [f"H{h}" for _, h in cells], [f"L{l}" for l, _ in cells], [list(c) for c in cells],
                         [f"L{l} H{h}: {heads[l, h]:+.4f}<br>click to pick this head" for l, h in cells],
                         0.8 * min(40, 740 / H))

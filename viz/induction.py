"""Figures for the induction-heads view: training curves across checkpoints, and the knock-out bars.

Figures only: takes the scores train/induction.py measured (a dict of lists) or experiments' tables, never runs a
model. Step axes are training steps; the phase change and the checkpoint picked are drawn as vertical lines.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz.common import PALETTE, VERMILLION

LAYER_DASH = ("dot", "solid")  # layer 0's heads dotted, layer 1's solid: the induction heads are in layer 1
HEAD_COLOURS = PALETTE


def phase_change(steps: list[int], best_prefix: list[float], at: float = 0.3) -> int | None:
    """The first step whose best prefix matching reaches `at`, e.g. ([0, 100], [0.02, 0.5]) -> 100; None if none."""
    return next((s for s, p in zip(steps, best_prefix) if p >= at), None)


def curves(record: dict, picked: int) -> go.Figure:
    """Three panels over training steps: the two losses and the ICL score; each head's prefix matching; each head's
    copying score. A grey band marks the phase change (first step with best prefix matching >= 0.3 and the
    checkpoint before it), a red line the picked checkpoint."""
    steps = record["steps"]
    s = record["scores"]
    prefix = np.array([r["prefix_matching"] for r in s])   # (checkpoints, L, H)
    copying = np.array([r["copying"] for r in s])          # (checkpoints, L, H)
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06,
                        subplot_titles=("Loss on the first copy and on the repeat (nats)",
                                        "Prefix matching: attention from a repeated token to the one after its "
                                        "first occurrence", "Copying score of each head's OV circuit"))
    for name, key, colour in (("first copy", "loss_first", "#7f7f7f"), ("repeat", "loss_repeat", "#21918c"),
                              ("ICL score = repeat − first", "icl_score", "#d1495b")):
        fig.add_trace(go.Scatter(x=steps, y=[r[key] for r in s], name=name, mode="lines+markers", legendgroup="loss",
                                 line=dict(color=colour, dash="dash" if key == "icl_score" else "solid"),
                                 hovertemplate=f"step %{{x:,}}<br>{name}: %{{y:.3f}}<extra></extra>"), 1, 1)
    n_layers, n_heads = prefix.shape[1:]
    for panel, values in ((2, prefix), (3, copying)):
        for l in range(n_layers):
            for h in range(n_heads):
                fig.add_trace(go.Scatter(
                    x=steps, y=values[:, l, h], name=f"L{l} H{h}", legendgroup=f"L{l}H{h}", showlegend=panel == 2,
                    mode="lines", line=dict(color=HEAD_COLOURS[(l * n_heads + h) % len(HEAD_COLOURS)],
                                            dash=LAYER_DASH[min(l, 1)]),
                    hovertemplate=f"step %{{x:,}}<br>L{l} H{h}: %{{y:.3f}}<extra></extra>"), panel, 1)
    jump = phase_change(steps, prefix[:, -1].max(-1).tolist())
    if jump is not None:
        before = steps[max(0, steps.index(jump) - 1)]
        fig.add_vrect(x0=before, x1=jump, fillcolor="rgba(120,120,120,0.25)", line_width=0, row="all", col=1)
        fig.add_annotation(x=jump, y=0.3, xref="x2", yref="y2", text=f" phase change by step {jump:,}",
                           showarrow=False, xanchor="left", font=dict(size=11), bgcolor="rgba(255,255,255,0.85)")
    fig.add_vline(x=picked, line=dict(color=VERMILLION, width=2), row="all", col=1)
    fig.update_yaxes(title_text="loss", row=1, col=1)
    fig.update_yaxes(title_text="prefix matching", range=[0, 1], row=2, col=1)
    fig.update_yaxes(title_text="copying", range=[-1, 1], row=3, col=1)
    fig.update_xaxes(title_text="training step", row=3, col=1)
    fig.update_layout(height=760, margin=dict(l=10, r=10, t=40, b=10), hovermode="x unified",
                      legend=dict(title="dotted: layer 0 · solid: layer 1"))
    return fig


def knock_out_bars(rows: list[dict]) -> go.Figure:
    """Per knock-out (a row: its name, the induction head's prefix matching, the two losses): two bar panels."""
    names = [r["knocked out"] for r in rows]
    pm_key = next(k for k in rows[0] if k.startswith("prefix matching"))
    fig = make_subplots(rows=1, cols=2, subplot_titles=(pm_key, "Loss on the repeat (nats)"), horizontal_spacing=0.12)
    fig.add_trace(go.Bar(x=names, y=[r[pm_key] for r in rows], marker_color="#21918c", name=pm_key,
                         hovertemplate="%{x} knocked out<br>prefix matching %{y:.3f}<extra></extra>"), 1, 1)
    fig.add_trace(go.Bar(x=names, y=[r["loss on the repeat"] for r in rows], marker_color="#d1495b",
                         name="loss on the repeat",
                         hovertemplate="%{x} knocked out<br>loss on the repeat %{y:.3f}<extra></extra>"), 1, 2)
    fig.add_hline(y=rows[0]["loss on the first copy"], line=dict(dash="dot", color="grey"), row=1, col=2,
                  annotation_text="first copy (no context to use)", annotation_position="top left")
    fig.update_yaxes(title_text="prefix matching", range=[0, 1], row=1, col=1)
    fig.update_yaxes(title_text="loss", row=1, col=2)
    fig.update_xaxes(title_text="heads knocked out (gated to 0)")
    fig.update_layout(height=360, margin=dict(l=10, r=10, t=40, b=10), showlegend=False)
    return fig

"""Figures for the BPE page: the merge ladder, pair counts by rank, token counts per tokenizer.

Pure functions from analysis.bpe results to plotly Figures. They never train or encode anything.
Token strings are labels only: positions are numeric and every label is HTML-escaped.
"""
from __future__ import annotations

import plotly.graph_objects as go

from analysis.bpe import Merge, Step, readable
from viz.common import escape

WORD_GAP = 0.4        # space between words, in symbol widths
NEW = "#d62728"       # tokens the step's rule just made
CURRENT = "#1f77b4"   # the chosen step's other tokens
OTHER = "#c7d3e3"     # every other step


def rule_label(merge: Merge, alphabet: str) -> str:
    """'#3 t + he → the' (readable forms, not escaped)."""
    a, b, new = (readable(t, alphabet) for t in (merge.left, merge.right, merge.new))
    return f"#{merge.rank} {a} + {b} → {new}"


def merge_ladder(steps: list[Step], table: list[Merge], alphabet: str, current: int | None = None,
                 shown: list[int] | None = None) -> go.Figure:
    """One row per step, top to bottom: each token a box as wide as the symbols it covers.

    Red boxes are the tokens the row's rule made; the `current` row is drawn darker. `shown`: the steps to
    draw (default all), e.g. the start and the last few, as a long text's ladder has thousands of boxes.
    """
    shown = list(range(len(steps))) if shown is None else shown
    xs, ys, widths, labels, colors, hovers = [], [], [], [], [], []
    for y, row in enumerate(shown):
        step = steps[row]
        x, made = 0.0, set(step.merged)
        for k, (token, width, word) in enumerate(zip(step.tokens, step.widths, step.word_of)):
            if k and word != step.word_of[k - 1]:
                x += WORD_GAP
            label = escape(readable(token, alphabet))
            new = k in made
            xs.append(x)
            ys.append(y)
            widths.append(width)
            labels.append(label)
            colors.append(NEW if new else CURRENT if row == current else OTHER)
            hovers.append(f"step {row} · token {k}: {label}" + (" (new)" if new else ""))
            x += width
    ticks = ["start: single symbols" if row == 0 else escape(rule_label(table[steps[row].rank], alphabet))
             for row in shown]
    fig = go.Figure(go.Bar(
        base=xs, x=widths, y=ys, orientation="h", text=labels, textposition="inside",
        insidetextanchor="middle", textangle=0, hovertext=hovers, hoverinfo="text",
        marker=dict(color=colors, line=dict(color="white", width=2)), width=0.8,
    ))
    fig.update_layout(
        height=120 + 32 * len(shown), margin=dict(l=10, r=10, t=30, b=10), showlegend=False,
        title=f"{len(steps) - 1} merges turn {len(steps[0].tokens)} symbols into {len(steps[-1].tokens)} tokens",
        uniformtext=dict(minsize=9, mode="show"),
    )
    fig.update_yaxes(tickvals=list(range(len(shown))), ticktext=ticks, autorange="reversed")
    fig.update_xaxes(visible=False)
    return fig


def pair_counts(table: list[Merge], alphabet: str) -> go.Figure:
    """How often each merged pair occurred when it was merged, by rank: frequent pairs are learned first."""
    known = [m for m in table if m.count is not None]
    fig = go.Figure(go.Scatter(
        x=[m.rank for m in known], y=[m.count for m in known], mode="lines+markers", marker=dict(size=4),
        hovertext=[escape(rule_label(m, alphabet)) + f": {m.count:,}" for m in known], hoverinfo="text",
    ))
    fig.update_layout(height=300, margin=dict(l=10, r=10, t=30, b=10), title="Pair count when merged")
    fig.update_xaxes(title="merge rank")
    fig.update_yaxes(title="pair count", type="log", dtick=1)  # label decades only
    return fig


def token_counts(counts: dict[str, int]) -> go.Figure:
    """Bar per tokenizer: how many tokens the same text becomes."""
    names = list(counts)
    fig = go.Figure(go.Bar(
        x=list(range(len(names))), y=[counts[n] for n in names], text=[counts[n] for n in names],
        textposition="outside", marker_color=CURRENT,
    ))
    fig.update_layout(height=300, margin=dict(l=10, r=10, t=30, b=10), title="Tokens for the same text")
    fig.update_xaxes(tickvals=list(range(len(names))), ticktext=[escape(n) for n in names])
    fig.update_yaxes(title="tokens")
    return fig

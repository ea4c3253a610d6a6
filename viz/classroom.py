"""The class's answers to one lesson step, drawn for the teacher: a bar per answer given, right and wrong told apart by
colour and by pattern (so a colour-blind teacher or a grey printout still tells them apart). Draws; computes nothing
beyond counting rows."""
from __future__ import annotations

import plotly.graph_objects as go

RIGHT, WRONG = "#1f77b4", "#e8710a"  # blue and orange: apart for every common colour blindness


def answers_bar(counts: list[tuple[str, int, bool]], step: int, title: str) -> go.Figure:
    """counts: (answer, how many students gave it first, right?) -> bars, most given first.
        answers_bar([("L0 H2", 3, True), ("L5 H11", 1, False)], 2, "Many heads")"""
    ordered = sorted(counts, key=lambda c: (-c[1], c[0]))
    fig = go.Figure()
    for right, name, colour, pattern in ((True, "right", RIGHT, ""), (False, "wrong", WRONG, "/")):
        rows = [c for c in ordered if c[2] == right]
        fig.add_bar(x=[c[0] for c in rows], y=[c[1] for c in rows], name=name, marker_color=colour,
                    marker_pattern_shape=pattern, text=[c[1] for c in rows], textposition="outside",
                    hovertemplate="%{x}: %{y} students (" + name + ")<extra></extra>")
    total = sum(c[1] for c in counts)
    fig.update_layout(title=f"Step {step} · {title}: {total} first answers", barmode="overlay",
                      xaxis=dict(title="answer", categoryorder="array", categoryarray=[c[0] for c in ordered]),
                      yaxis=dict(title="students", rangemode="tozero", dtick=1 if total <= 10 else None),
                      font=dict(size=16), height=360, margin=dict(t=60, b=40), legend=dict(orientation="h"))
    return fig


def sentence(counts: list[tuple[str, int, bool]], step: int) -> str:
    """One sentence for a screen reader: how many answered, how many right, the commonest answer."""
    total = sum(c[1] for c in counts)
    right = sum(c[1] for c in counts if c[2])
    if not total:
        return f"No one has answered step {step} yet."
    top = max(counts, key=lambda c: (c[1], c[0]))
    return (f"Step {step}: {total} students answered, {right} right ({right / total:.0%}); the commonest answer, "
            f"{top[0]!r}, was given by {top[1]} and is {'right' if top[2] else 'wrong'}.")

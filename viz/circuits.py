"""The Circuits view's figures: the circuit as a layered graph, faithfulness against edges kept, EAP against patching.

Pure plotly from DataFrames of edges (sender, receiver, score) and plain numbers; runs no model. The sign of an
edge is told by colour and by line style (solid: patching the edge raises the metric, dashed: it lowers it, i.e.
the edge carries the clean answer), its size by width. Each node carries its name as customdata ("L1H3"), so a
click on a head's node can open that head; an edge tells its score at a small dot in its middle, not at its ends,
which lie on nodes.

    graph_figure(top, nodes)                       # top: the circuit's edges; nodes: every sender, then "logits"
    curve_figure([0, 5, 81], [0.1, 0.8, 1.0], 20, area=0.7)
    check_figure(eap, exact, ["L0H2 → L1H3.k", ...], rho=0.9)
"""
from __future__ import annotations

import re

import plotly.graph_objects as go

from viz.common import CHART_TEXT, LOWERS, RAISES, legend_below

PORT = {"q": 0.22, "k": 0.0, "v": -0.22}  # where a head's query, key and value inputs sit beside its node
_NAME = re.compile(r"L(\d+)(?:H(\d+)|\.mlp)")


def _place(node: str, n_layers: int) -> tuple[float, float]:
    """'embed' -> (0, mid); 'L1H3' -> (3, 3); 'L1.mlp' -> (4, -1); 'logits' -> (2 n_layers + 1, mid)."""
    if node in ("embed", "logits"):
        return (0.0 if node == "embed" else 2.0 * n_layers + 1, 1.5)
    layer, head = _NAME.match(node).groups()
    return (2.0 * int(layer) + 1, float(head)) if head is not None else (2.0 * int(layer) + 2, -1.0)


def _end(receiver: str, n_layers: int) -> tuple[float, float]:
    node, _, port = receiver.partition(".")
    if port in PORT:
        x, y = _place(node, n_layers)
        return x - 0.15, y + PORT[port]
    return _place(receiver, n_layers)


def graph_figure(top, nodes: list[str]) -> go.Figure:
    """Nodes by layer (the embedding left, each layer's heads in a column and its MLP below, the logits right) and
    the circuit's edges, each as a line from its sender to the receiver's input (q, k, v beside a head)."""
    n_layers = 1 + max((int(m.group(1)) for m in map(_NAME.match, nodes) if m), default=-1)
    fig = go.Figure()
    biggest = float(top.score.abs().max()) if len(top) else 1.0
    shown, middles = set(), []
    for s, r, score in zip(top.sender, top.receiver, top.score):
        (x0, y0), (x1, y1) = _place(s, n_layers), _end(r, n_layers)
        up = score >= 0
        name = "patching it raises the metric" if up else "patching it lowers the metric (carries the answer)"
        fig.add_trace(go.Scatter(
            x=[x0, x1], y=[y0, y1], mode="lines", name=name, legendgroup=name, showlegend=name not in shown,
            line=dict(color=RAISES if up else LOWERS, dash="solid" if up else "dash",
                      width=1 + 7 * abs(score) / (biggest or 1.0)),
            hoverinfo="skip"))  # an edge's ends lie on nodes: there a hover or a click is the node's
        shown.add(name)
        middles.append(((x0 + x1) / 2, (y0 + y1) / 2, f"{s} → {r}<br>score {score:+.3g}"))
    fig.add_trace(go.Scatter(x=[x for x, _, _ in middles], y=[y for _, y, _ in middles], mode="markers",
                             text=[t for _, _, t in middles], hovertemplate="%{text}<extra></extra>",
                             marker=dict(size=6, color=CHART_TEXT, opacity=0.35), showlegend=False,
                             name="edges' middles"))
    ports = [(r, _end(r, n_layers)) for r in dict.fromkeys(top.receiver) if r.rpartition(".")[2] in PORT]
    fig.add_trace(go.Scatter(x=[x for _, (x, _) in ports], y=[y for _, (_, y) in ports], mode="text",
                             text=[r[-1] for r, _ in ports], textposition="middle left", showlegend=False,
                             textfont=dict(color=CHART_TEXT, size=10), hoverinfo="skip"))
    xy = [_place(n, n_layers) for n in nodes]
    used = set(top.sender) | {r.partition(".")[0] for r in top.receiver}
    fig.add_trace(go.Scatter(
        x=[x for x, _ in xy], y=[y for _, y in xy], mode="markers+text", text=nodes, textposition="top center",
        customdata=nodes, name="heads, MLPs, embedding and logits", showlegend=False, hoverinfo="text",
        marker=dict(size=[14 if n in used else 8 for n in nodes], color=["#000000" if n in used else "#7f7f7f"
                                                                            for n in nodes], symbol="circle"),
        textfont=dict(color=CHART_TEXT)))
    parts = ("heads", "MLP") if any(n.endswith(".mlp") for n in nodes) else ("heads",)
    ticks = [0] + [2 * layer + 1 + i for layer in range(n_layers) for i in range(len(parts))] + [2 * n_layers + 1]
    labels = ["embed"] + [f"L{layer} {p}" for layer in range(n_layers) for p in parts] + ["logits"]
    legend_below(fig, f"The circuit: its {len(top)} strongest edges", height=420)
    fig.update_layout(xaxis=dict(tickvals=ticks, ticktext=labels, showgrid=False, zeroline=False),
                      yaxis=dict(visible=False))
    return fig


def curve_figure(counts: list[int], values: list[float], top: int, area: float) -> go.Figure:
    """Faithfulness against edges kept (0: none, the last: every edge), the view's top count marked."""
    x = [str(c) for c in counts]  # evenly spaced, 0 included (a log axis would drop it)
    fig = go.Figure(go.Scatter(x=x, y=values, mode="lines+markers", name="faithfulness",
                               line=dict(color=RAISES), hovertemplate="%{x} edges kept: %{y:.3f}<extra></extra>"))
    if top in counts:
        fig.add_trace(go.Scatter(x=[str(top)], y=[values[counts.index(top)]], mode="markers", name=f"the top {top}",
                                 marker=dict(size=14, symbol="diamond", color=LOWERS)))
    fig.add_hline(y=1.0, line=dict(color=CHART_TEXT, dash="dot"))
    legend_below(fig, f"Faithfulness against edges kept (area under the curve {area:.2f})",
                 x="edges kept clean, strongest first (the rest patched; not to scale)",
                 y="metric / the model's metric")
    fig.update_xaxes(type="category")
    return fig


def check_figure(eap: list[float], exact: list[float], labels: list[str], rho: float) -> go.Figure:
    """Each top edge's EAP estimate (x) against the exact effect of patching it alone (y); the diagonal is y = x."""
    lo, hi = min(eap + exact + [0.0]), max(eap + exact + [0.0])
    fig = go.Figure([
        go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="estimate = exact", line=dict(color=CHART_TEXT,
                                                                                              dash="dot")),
        go.Scatter(x=eap, y=exact, mode="markers", name="an edge", text=labels, marker=dict(color=RAISES, size=9),
                   hovertemplate="%{text}<br>EAP %{x:+.3g}, patched %{y:+.3g}<extra></extra>")])
    return legend_below(fig, f"EAP's estimate against exact patching, top {len(eap)} edges (Spearman ρ = {rho:.2f})",
                        x="EAP estimate of the metric's change", y="metric's change, that edge patched")

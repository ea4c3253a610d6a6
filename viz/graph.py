"""Attention graphs drawn with plotly: one layer as a token graph, all layers stacked, the matrices
rollout and flow produce, and which tokens collect attention.

Figures only: takes networkx graphs (analysis.graph) and arrays, never runs a model or computes
attention. Tokens are placed by position (numeric axes), so repeated tokens stay apart, and every
label is HTML-escaped. Edges are grouped into a few weight bands, one trace per band, so a graph of
thousands of edges is still a handful of traces; each edge also gets a hover dot near its key end.
"""
from __future__ import annotations

import networkx as nx
import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale
from plotly.subplots import make_subplots

from analysis.tokens import readable
from viz.common import escape

COLORSCALE = "Viridis"
LAYOUTS = ("columns", "circular", "force")
_BANDS = 6  # weight bands, each one trace with its own width and opacity


def _label(token: str, pos: int) -> str:
    """'<b>' at 3 -> '&lt;b&gt; ·3', 'Ġbank' at 2 -> '␣bank ·2' (analysis.tokens); position keeps repeats apart."""
    return f"{escape(readable(token) or '∅')} ·{pos}"


def _edge_traces(segments: list[tuple[float, float, float, float, float, str]], w_max: float,
                 legend: bool = False) -> list[go.Scatter]:
    """segments: (x0, y0, x1, y1, weight, hover). Lines in weight bands, plus one trace of hover dots.
    legend: each band is a legend entry named by its weights, '0.33–0.50', drawn in its own width and colour."""
    if not segments:
        return []
    seg = np.array([s[:5] for s in segments])  # (E, 5)
    band = np.minimum((seg[:, 4] / max(w_max, 1e-12) * _BANDS).astype(int), _BANDS - 1)  # (E,)
    colors = sample_colorscale(COLORSCALE, [0.15 + 0.85 * b / (_BANDS - 1) for b in range(_BANDS)])
    traces = []
    for b in range(_BANDS):
        rows = seg[band == b]
        if not len(rows):
            continue
        xs = np.column_stack([rows[:, 0], rows[:, 2], np.full(len(rows), np.nan)]).ravel()
        ys = np.column_stack([rows[:, 1], rows[:, 3], np.full(len(rows), np.nan)]).ravel()
        traces.append(go.Scatter(
            x=xs, y=ys, mode="lines", hoverinfo="skip", showlegend=legend,
            name=f"{w_max * b / _BANDS:.2f}–{w_max * (b + 1) / _BANDS:.2f}",
            line=dict(width=0.6 + 5.0 * (b + 1) / _BANDS, color=colors[b]),
            opacity=round(0.2 + 0.8 * (b + 1) / _BANDS, 3),
        ))
    dots = seg[:, :2] + 0.8 * (seg[:, 2:4] - seg[:, :2])  # (E, 2) most of the way to the key
    traces.append(go.Scatter(
        x=dots[:, 0], y=dots[:, 1], mode="markers", showlegend=False, hoverinfo="text",
        hovertext=[s[5] for s in segments], marker=dict(size=5, opacity=0.35, color=[colors[b] for b in band]),
    ))
    return traces


def _positions(g: nx.DiGraph, layout: str) -> dict:
    """Node -> (x, y) for circular or force layouts; tokens in reading order, clockwise from the top."""
    nodes = sorted(g.nodes, key=lambda n: (str(g.nodes[n].get("side", "")) == "key", g.nodes[n]["pos"]))
    if layout == "circular":
        angle = np.pi / 2 - 2 * np.pi * np.arange(len(nodes)) / max(len(nodes), 1)
        return {n: (float(np.cos(a)), float(np.sin(a))) for n, a in zip(nodes, angle)}
    undirected = nx.Graph()
    undirected.add_nodes_from(nodes)
    undirected.add_weighted_edges_from((u, v, d["weight"]) for u, v, d in g.edges(data=True) if u != v)
    pos = nx.spring_layout(undirected, weight="weight", seed=0)
    return {n: (float(p[0]), float(p[1])) for n, p in pos.items()}


def _kept(g: nx.DiGraph) -> str:
    """The rule the graph's edges were kept by, in words (analysis.graph.token_graph keeps it on the graph)."""
    top_k, threshold = g.graph.get("top_k"), g.graph.get("threshold") or 0.0
    rule = [f"each query's {top_k} heaviest keys" if top_k else "", f"weight ≥ {threshold:.2f}" if threshold else ""]
    return " and ".join(r for r in rule if r) or "every weight above 0"


def token_graph_figure(g: nx.DiGraph, layout: str = "columns", title: str = "") -> go.Figure:
    """One attention matrix as a graph (analysis.graph.token_graph). layout: columns (queries left,
    keys right, the classic view), circular or force (spring layout, seeded, so it is repeatable).
    The columns are titled (a layer's output on the left, its input on the right; decoder steps and source
    tokens for cross-attention); the legend names each weight band, what width and colour mean and which
    edges were kept."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, not {layout!r}")
    bipartite = bool(g.graph.get("bipartite"))
    weights = [d["weight"] for _, _, d in g.edges(data=True)]
    w_max = max(weights, default=1.0)
    node_text = {n: _label(d["token"], d["pos"]) for n, d in g.nodes(data=True)}
    fig = go.Figure()
    if layout == "columns":
        left = [n for n in g.nodes if not bipartite or n[0] == "q"]
        right = [n for n in g.nodes if not bipartite or n[0] == "k"]
        at_left = {n: (0.0, -float(g.nodes[n]["pos"])) for n in left}
        at_right = {n: (1.0, -float(g.nodes[n]["pos"])) for n in right}
        segments = [(*at_left[u], *at_right[v], d["weight"], f"{node_text[u]} → {node_text[v]}: {d['weight']:.3f}")
                    for u, v, d in g.edges(data=True)]
        for trace in _edge_traces(segments, w_max, legend=True):
            fig.add_trace(trace)
        for side, at, anchor in (("query", at_left, "middle left"), ("key", at_right, "middle right")):
            nodes = list(at)
            fig.add_trace(go.Scatter(
                x=[at[n][0] for n in nodes], y=[at[n][1] for n in nodes], mode="markers+text", showlegend=False,
                text=[node_text[n] for n in nodes], textposition=anchor, hoverinfo="text",
                hovertext=[f"{side} {node_text[n]}" for n in nodes], marker=dict(size=7, color="#444"),
            ))
        heads = (("queries (decoder steps)", "keys (source tokens)") if bipartite else
                 ("queries (layer output)", "keys (layer input)"))
        pos = [g.nodes[n]["pos"] for n in g.nodes] or [0]
        for x, text, anchor in ((0.0, heads[0], "right"), (1.0, heads[1], "left")):
            fig.add_annotation(x=x, y=-min(pos) + 0.6, text=f"<b>{text}</b>", showarrow=False, xanchor=anchor,
                               yanchor="bottom")
        fig.update_xaxes(range=[-0.9, 1.9])
        fig.update_yaxes(range=[-max(pos) - 0.8, -min(pos) + 1.6])
        height = 150 + 22 * max(len(left), len(right))
    else:
        pos = _positions(g, layout)
        segments = [(*pos[u], *pos[v], d["weight"], f"{node_text[u]} → {node_text[v]}: {d['weight']:.3f}")
                    for u, v, d in g.edges(data=True) if u != v]
        for trace in _edge_traces(segments, w_max, legend=True):
            fig.add_trace(trace)
        nodes = list(pos)
        self_w = {n: g[n][n]["weight"] if g.has_edge(n, n) else 0.0 for n in nodes}
        fig.add_trace(go.Scatter(
            x=[pos[n][0] for n in nodes], y=[pos[n][1] for n in nodes], mode="markers+text", showlegend=False,
            text=[node_text[n] for n in nodes], textposition="top center", hoverinfo="text",
            hovertext=[f"{node_text[n]}<br>to itself: {self_w[n]:.3f}<br>attention in: "
                       f"{g.in_degree(n, weight='weight'):.3f}" for n in nodes],
            marker=dict(size=9, color=["#c0392b" if bipartite and n[0] == "k" else "#444" for n in nodes]),
        ))
        fig.update_yaxes(scaleanchor="x")
        height = 640
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    legend = ["<b>Attention weight</b>", "what a query takes from", "a key; heavier: thicker,", "brighter, more opaque"]
    if layout != "columns":
        legend += ["the small dot sits near", "the key's end"] + (["red: source tokens"] if bipartite else [])
    legend += ["", "<b>Edges kept</b>", *_wrap(_kept(g))]
    fig.update_layout(title=title, height=height, margin=dict(l=10, r=10, t=50, b=10), plot_bgcolor="white",
                      hoverlabel=dict(namelength=-1), legend=dict(title=dict(text="<br>".join(legend)),
                                                                  traceorder="reversed", font=dict(size=11)))
    return fig


def _wrap(text: str, width: int = 22) -> list[str]:
    """'the 3 heaviest of each query' -> ['the 3 heaviest of each', 'query']: a legend title has no wrapping."""
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def layered_figure(g: nx.DiGraph, title: str = "") -> go.Figure:
    """All layers at once (analysis.graph.layered_graph): one row of tokens per layer, input at the bottom."""
    n_layers = max(d["layer"] for _, d in g.nodes(data=True))
    tokens = sorted(((d["pos"], d["token"]) for _, d in g.nodes(data=True) if d["layer"] == 0))
    weights = [d["weight"] for _, _, d in g.edges(data=True)]
    segments = [(float(u[1]), float(u[0]), float(v[1]), float(v[0]), d["weight"],
                 f"L{u[0] - 1}: {_label(tokens[u[1]][1], u[1])} → {_label(tokens[v[1]][1], v[1])}: {d['weight']:.3f}")
                for u, v, d in g.edges(data=True)]
    fig = go.Figure(_edge_traces(segments, max(weights, default=1.0)))
    nodes = list(g.nodes)
    fig.add_trace(go.Scatter(
        x=[n[1] for n in nodes], y=[n[0] for n in nodes], mode="markers", showlegend=False, hoverinfo="text",
        hovertext=[f"{_label(tokens[n[1]][1], n[1])} after L{n[0] - 1}" if n[0] else
                   f"input {_label(tokens[n[1]][1], n[1])}" for n in nodes],
        marker=dict(size=6, color="#444"),
    ))
    fig.update_xaxes(tickmode="array", tickvals=[p for p, _ in tokens], ticktext=[_label(t, p) for p, t in tokens],
                     tickangle=-60, showgrid=False, zeroline=False)
    fig.update_yaxes(tickmode="array", tickvals=list(range(n_layers + 1)),
                     ticktext=["input"] + [f"after L{l}" for l in range(n_layers)],
                     showgrid=False, zeroline=False)
    fig.update_layout(title=title, height=160 + 70 * n_layers, margin=dict(l=10, r=10, t=50, b=10),
                      plot_bgcolor="white")
    return fig


def matrices_figure(panels: list[tuple[str, np.ndarray]], tokens: list[str], key_tokens: list[str] | None = None
                    ) -> go.Figure:
    """Heatmaps side by side, e.g. [("raw", A), ("rollout", R), ("flow", F)]: rows are top-layer (query)
    tokens, columns input (key) tokens. Each panel has its own colour range and bar: flow is much flatter
    than rollout, and on a shared range its pattern would vanish."""
    key_tokens = tokens if key_tokens is None else key_tokens
    n = len(panels)
    gap = 0.1
    fig = make_subplots(rows=1, cols=n, subplot_titles=[escape(t) for t, _ in panels], horizontal_spacing=gap)
    qt, kt = [_label(t, i) for i, t in enumerate(tokens)], [_label(t, i) for i, t in enumerate(key_tokens)]
    names = np.array([[[q, k] for k in kt] for q in qt])  # (Tq, Tk, 2) for the hover
    width = (1 - gap * (n - 1)) / n
    for c, (name, m) in enumerate(panels, start=1):
        axis = "coloraxis" if c == 1 else f"coloraxis{c}"
        fig.add_trace(go.Heatmap(
            z=np.round(np.asarray(m, dtype=np.float32), 4), coloraxis=axis, customdata=names,
            hovertemplate=f"{escape(name)}<br>%{{customdata[0]}} ← %{{customdata[1]}}: %{{z:.3f}}<extra></extra>",
        ), row=1, col=c)
        fig.update_layout({axis: dict(colorscale=COLORSCALE, colorbar=dict(
            x=(c - 1) * (width + gap) + width + 0.005, xanchor="left", len=0.8, thickness=8, tickfont=dict(size=9)))})
        fig.update_xaxes(tickmode="array", tickvals=list(range(len(kt))), ticktext=kt, tickangle=-90, row=1, col=c)
        fig.update_yaxes(tickmode="array", tickvals=list(range(len(qt))), ticktext=qt if c == 1 else [""] * len(qt),
                         autorange="reversed", row=1, col=c)
    fig.update_layout(height=min(900, 260 + 16 * len(tokens)), margin=dict(l=10, r=30, t=50, b=10))
    return fig


def collectors_figure(strength: np.ndarray, rank: np.ndarray | None, tokens: list[str]) -> go.Figure:
    """Which tokens collect attention, per layer: in-strength [L, T] and PageRank [L, T] (None for
    cross-attention) as heatmaps, layers top to bottom, tokens left to right."""
    panels = [("attention received (in-strength)", strength)] + ([("PageRank", rank)] if rank is not None else [])
    fig = make_subplots(rows=len(panels), cols=1, subplot_titles=[t for t, _ in panels], vertical_spacing=0.3)
    labels = [_label(t, i) for i, t in enumerate(tokens)]
    for r, (name, m) in enumerate(panels, start=1):
        fig.add_trace(go.Heatmap(
            z=np.round(np.asarray(m, dtype=np.float32), 4), colorscale=COLORSCALE, showscale=False,
            customdata=np.array([labels] * m.shape[0]),
            hovertemplate=f"L%{{y}}<br>%{{customdata}}<br>{name}: %{{z:.3f}}<extra></extra>",
            y=np.arange(m.shape[0]),
        ), row=r, col=1)
        fig.update_xaxes(tickmode="array", tickvals=list(range(len(labels))), ticktext=labels, tickangle=-60,
                         row=r, col=1)
        fig.update_yaxes(title="layer", autorange="reversed", dtick=1, row=r, col=1)
    fig.update_layout(height=260 + 220 * len(panels), margin=dict(l=10, r=10, t=50, b=10))
    return fig


def edges_table(g: nx.DiGraph, digits: int = 4):
    """A graph's edges as a table a screen reader reads row by row, strongest first: who attends (the query token,
    its layer in a layered graph), to whom, and the weight. A pandas DataFrame; only the edges the graph kept."""
    import pandas as pd

    def name(node) -> str:
        data = g.nodes[node]
        where = f"L{data['layer']} · " if "layer" in data else ""
        return f"{where}{readable(data['token'])} ({data['pos']})"

    rows = [{"from (query)": name(a), "to (key)": name(b), "weight": round(w, digits)}
            for a, b, w in g.edges(data="weight")]
    table = pd.DataFrame(rows, columns=["from (query)", "to (key)", "weight"])
    return table.sort_values("weight", ascending=False, kind="stable").reset_index(drop=True)

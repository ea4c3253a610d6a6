"""The Circuits view's figures: the circuit as a layered graph, faithfulness against edges kept, EAP against patching.

Pure plotly from DataFrames of edges (sender, receiver, score) and plain numbers; runs no model. The sign of an
edge is told by colour and by line style (solid: patching the edge raises the metric, dashed: it lowers it, i.e.
the edge carries the clean answer), its size by width. Each node carries its name as customdata ("L1H3"), so a
click on a head's node can open that head; an edge tells its score at a small dot in its middle, not at its ends,
which lie on nodes. An encoder-decoder's names carry their stack ("enc.L0H1", "dec.L0.mlp", "cross.L1H2.k"): its
encoder's columns come first, shaded, then its decoder's, each layer's self-attention, cross-attention and MLP; a
cross-attention head's k and v edges start in the encoder.

    graph_figure(top, nodes)                       # top: the circuit's edges; nodes: every sender, then "logits"
    curve_figure([0, 5, 81], [0.1, 0.8, 1.0], 20, area=0.7)
    check_figure(eap, exact, ["L0H2 → L1H3.k", ...], rho=0.9)

Read back from a click on the graph: name_of(event) is the head a selection names, heads_in(names) the heads among
senders and receivers, order(name) its (stack, layer, head) and rank(name) the order a head box lists them in:

    name_of({"selection": {"points": [{"customdata": "cross.L1H3"}]}}) -> "cross.L1H3";  order("L10H2") -> ("", 10, 2)
"""
from __future__ import annotations

import re

import plotly.graph_objects as go

from viz.common import CHART_TEXT, LOWERS, RAISES, legend_below

PORT = {"q": 0.22, "k": 0.0, "v": -0.22}  # where a head's query, key and value inputs sit beside its node
STACKS = ("enc", "dec", "cross")  # an encoder-decoder's names: "enc.L0H1", "dec.L0.mlp", "cross.L1H2.k"
_NAME = re.compile(r"L(\d+)(?:H(\d+)|\.mlp)")
_HEAD = re.compile(r"(?:(enc|dec|cross)\.)?L(\d+)H(\d+)")  # 'L1H3', 'cross.L1H3'
NODES = "heads, MLPs, embedding and logits"  # the nodes' trace: its points carry their names
STUBS = "a head's inputs"  # the short lines from a head's q, k and v inputs (where edges end) to its node
LABEL_BACKING = "rgba(255, 255, 255, 0.85)"  # behind a node's name, over the edges (the plot's own white)
BOW = 0.45  # how far an edge along one row bows off it, in rows (heads are a row apart)
LABELLED = 80  # up to this many nodes every one is named; past it (their names would overlap) only the circuit's
# heads, the MLPs, the embedding and the logits, each head still named by its hover


def _split(name: str) -> tuple[str | None, str]:
    """A sender's or receiver's stack and its name within it, as an encoder-decoder's graph names it:
    'cross.L1H2.k' -> ('cross', 'L1H2.k'); 'enc.embed' -> ('enc', 'embed'); 'logits' -> (None, 'logits')."""
    stack, dot, rest = name.partition(".")
    return (stack, rest) if dot and stack in STACKS else (None, name)


def _node(receiver: str) -> str:
    """The node a receiver belongs to: 'enc.L0H1.q' -> 'enc.L0H1'; 'L1.mlp' -> 'L1.mlp'; 'logits' -> 'logits'."""
    node, _, port = receiver.rpartition(".")
    return node if port in PORT else receiver


class _Columns:
    """Where each node sits. A decoder: the embedding, then per layer a column of heads and one with the MLP below,
    the logits last. An encoder-decoder: the encoder's embedding and layers first, then the decoder's embedding and
    per layer its self-attention heads, its cross-attention heads and its MLP, the logits last."""

    def __init__(self, nodes: list[str]) -> None:
        layers = {}
        for n in nodes:
            stack, name = _split(n)
            if m := _NAME.match(name):
                key = "dec" if stack == "cross" else stack
                layers[key] = max(layers.get(key, 0), int(m.group(1)) + 1)
            if m and m.group(2) is not None:
                layers["heads"] = max(layers.get("heads", 0), int(m.group(2)) + 1)
        self.encdec = any(_split(n)[0] for n in nodes)
        self.n = layers.get(None, 0)
        self.n_enc, self.n_dec = layers.get("enc", 0), layers.get("dec", 0)
        self.mid = (layers.get("heads", 4) - 1) / 2
        self.dec0 = 2.0 * self.n_enc + 1  # the decoder's embedding column

    def place(self, node: str) -> tuple[float, float]:
        """'embed' -> (0, mid); 'L1H3' -> (3, 3); 'L1.mlp' -> (4, -1); 'logits' -> (2 n_layers + 1, mid);
        'enc.L0H1' -> (1, 1); 'dec.embed' -> (2 n_enc + 1, mid); 'cross.L0H1' -> (2 n_enc + 3, 1)."""
        stack, name = _split(node)
        if name == "logits":
            return (self.dec0 + 3 * self.n_dec + 1 if self.encdec else 2.0 * self.n + 1), self.mid
        base = self.dec0 if stack in ("dec", "cross") else 0.0
        if name == "embed":
            return base, self.mid
        layer, head = _NAME.match(name).groups()
        if stack in ("dec", "cross"):
            x = base + 3 * int(layer) + (3 if head is None else 1 if stack == "dec" else 2)
        else:
            x = base + 2 * int(layer) + (2 if head is None else 1)
        return x, (-1.0 if head is None else float(head))

    def end(self, receiver: str) -> tuple[float, float]:
        """Where an edge into `receiver` ends: a head's q, k or v input beside its node, else the node."""
        x, y = self.place(_node(receiver))
        port = receiver.rpartition(".")[2]
        return (x - 0.15, y + PORT[port]) if _node(receiver) != receiver else (x, y)

    def ticks(self, mlp: bool) -> tuple[list[float], list[str]]:
        """The x axis' columns and their names."""
        if not self.encdec:
            parts = ("heads", "MLP") if mlp else ("heads",)
            cols = [(0.0, "embed")] + [(2.0 * layer + 1 + i, f"L{layer} {p}") for layer in range(self.n)
                                       for i, p in enumerate(parts)]
            return [x for x, _ in cols] + [self.place("logits")[0]], [t for _, t in cols] + ["logits"]
        cols = [(0.0, "embed")] + [(2.0 * layer + 1 + i, f"L{layer}<br>{p}") for layer in range(self.n_enc)
                                   for i, p in enumerate(("heads", "MLP"))]
        cols += [(self.dec0, "embed")] + [(self.dec0 + 3 * layer + 1 + i, f"L{layer}<br>{p}") for layer in
                                          range(self.n_dec) for i, p in enumerate(("self", "cross", "MLP"))]
        cols.append((self.place("logits")[0], "logits"))
        return [x for x, _ in cols], [t for _, t in cols]


def graph_figure(top, nodes: list[str]) -> go.Figure:
    """Nodes by layer (the embedding left, each layer's heads in a column and its MLP below, the logits right; an
    encoder-decoder's encoder first, shaded, then its decoder with each layer's self- and cross-attention) and the
    circuit's edges, each as a line from its sender to the receiver's input (q, k, v beside a head)."""
    cols = _Columns(nodes)
    fig = go.Figure()
    biggest = float(top.score.abs().max()) if len(top) else 1.0
    shown, middles = set(), []
    for s, r, score in zip(top.sender, top.receiver, top.score):
        (x0, y0), (x1, y1) = cols.place(s), cols.end(r)
        xm, ym = (x0 + x1) / 2, (y0 + y1) / 2
        if y0 == cols.place(_node(r))[1] and x1 - x0 > 2.5:  # along a row past other columns: bowed between rows,
            # not through their nodes
            ym += BOW if y0 >= 0 else -BOW  # an MLP's row (below the heads) bows further down
        up = score >= 0
        name = "patching it raises the metric" if up else "patching it lowers the metric (carries the answer)"
        fig.add_trace(go.Scatter(
            x=[x0, xm, x1], y=[y0, ym, y1], mode="lines", name=name, legendgroup=name, showlegend=name not in shown,
            line=dict(color=RAISES if up else LOWERS, dash="solid" if up else "dash", shape="spline",
                      width=1 + 7 * abs(score) / (biggest or 1.0)),
            hoverinfo="skip"))  # an edge's ends lie on nodes: there a hover or a click is the node's
        shown.add(name)
        middles.append((xm, ym, f"{s} → {r}<br>score {score:+.3g}"))
    fig.add_trace(go.Scatter(x=[x for x, _, _ in middles], y=[y for _, y, _ in middles], mode="markers",
                             text=[t for _, _, t in middles], hovertemplate="%{text}<extra></extra>",
                             marker=dict(size=6, color=CHART_TEXT, opacity=0.35), showlegend=False,
                             name="edges' middles"))
    ports = [(r, cols.end(r)) for r in dict.fromkeys(top.receiver) if _node(r) != r]
    stubs = [v for r, (x, y) in ports for v in ((x, y), cols.place(_node(r)), (None, None))]  # each port to its head
    fig.add_trace(go.Scatter(x=[x for x, _ in stubs], y=[y for _, y in stubs], mode="lines", showlegend=False,
                             line=dict(color=CHART_TEXT, width=1), hoverinfo="skip", name=STUBS))
    fig.add_trace(go.Scatter(x=[x for _, (x, _) in ports], y=[y for _, (_, y) in ports], mode="text",
                             text=[r[-1] for r, _ in ports], textposition="middle right", showlegend=False,
                             textfont=dict(color=CHART_TEXT, size=10), hoverinfo="skip"))  # edges come from the left
    xy = [cols.place(n) for n in nodes]
    used = set(top.sender) | {_node(r) for r in top.receiver}
    fig.add_trace(go.Scatter(
        x=[x for x, _ in xy], y=[y for _, y in xy], mode="markers", text=nodes, customdata=nodes, name=NODES,
        showlegend=False, hovertext=nodes, hoverinfo="text",
        marker=dict(size=[14 if n in used else 8 for n in nodes], color=["#000000" if n in used else "#7f7f7f"
                                                                            for n in nodes], symbol="circle")))
    named = [(n, p) for n, p in zip(nodes, xy) if len(nodes) <= LABELLED or n in used or _head(n) is None]
    fig.update_layout(annotations=[  # above the edges, on a backing of their own, so that no edge crosses a name; set
        dict(x=x, y=y, text=_label(n), showarrow=False, yshift=14, xshift=8, xanchor="center",  # right of the q
             bgcolor=LABEL_BACKING, font=dict(color=CHART_TEXT, size=11), borderpad=1)  # port's letter; at once: one
        for n, (x, y) in named])  # add_annotation each is quadratic
    if cols.encdec:  # the encoder's columns shaded; cross-attention's k and v edges cross from it
        fig.add_vrect(x0=-0.5, x1=cols.dec0 - 0.5, fillcolor="#7f7f7f", opacity=0.08, line_width=0)
        for x, text in ((-0.5, "encoder"), (cols.dec0 - 0.5, "decoder: self-attention, cross-attention, MLP")):
            fig.add_annotation(x=x, y=1.0, xref="x", yref="paper", text=f"<b>{text}</b>", showarrow=False,
                               xanchor="left", yanchor="bottom", font=dict(color=CHART_TEXT))
    ticks, labels = cols.ticks(any(n.endswith(".mlp") for n in nodes))
    legend_below(fig, f"The circuit: its {len(top)} strongest edges", height=420 + 60 * cols.encdec)
    fig.update_layout(xaxis=dict(tickvals=ticks, ticktext=labels, showgrid=False, zeroline=False),
                      yaxis=dict(visible=False), legend_y=-0.15 if cols.encdec else -0.1,  # below two-line ticks
                      plot_bgcolor="white")
    return fig


def _label(node: str) -> str:
    """A node's label: its name within its column, as the axis names its columns ('cross.L0H1' -> 'L0H1',
    'dec.L0.mlp' -> 'L0 MLP')."""
    name = _split(node)[1]
    return name.replace(".mlp", " MLP")


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


def check_figure(eap: list[float], exact: list[float], labels: list[str], rho: float, method: str = "EAP") -> go.Figure:
    """Each top edge's estimate by `method` (EAP or EAP-IG, x) against the exact effect of patching it alone (y); the
    diagonal is y = x."""
    lo, hi = min(eap + exact + [0.0]), max(eap + exact + [0.0])
    fig = go.Figure([
        go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="estimate = exact", line=dict(color=CHART_TEXT,
                                                                                              dash="dot")),
        go.Scatter(x=eap, y=exact, mode="markers", name="an edge", text=labels, marker=dict(color=RAISES, size=9),
                   hovertemplate="%{text}<br>" + method + " %{x:+.3g}, patched %{y:+.3g}<extra></extra>")])
    return legend_below(fig, f"{method}'s estimate against exact patching, top {len(eap)} edges (Spearman ρ = "
                             f"{rho:.2f})", x=f"{method} estimate of the metric's change",
                        y="metric's change, that edge patched")


def _head(name: str) -> str | None:
    """The head a node or receiver names, its stack kept: 'L1H3.k' -> 'L1H3', 'cross.L0H1' -> 'cross.L0H1'; None
    for the embedding, an MLP or the logits."""
    m = _HEAD.match(name)
    return m.group(0) if m and name[m.end():] in ("", ".q", ".k", ".v") else None


def name_of(event) -> str | None:
    """The head named by the first selected point of a graph_figure selection event whose customdata or text names
    one ("L1H3", "cross.L1H3", or a receiver "L1H3.k"); None for no selection, or a click on the embedding, an MLP
    or the logits."""
    try:
        points = event["selection"]["points"] if event else []
    except (KeyError, TypeError):
        points = []
    for point in points:
        for value in (point.get("customdata"), point.get("text")):
            value = value[0] if isinstance(value, list | tuple) and value else value
            if isinstance(value, str) and (head := _head(value)):
                return head
    return None


def heads_in(names) -> list[str]:
    """The heads among senders and receivers, in their order, once each: ['L0H1', 'L1H0.k', 'L1.mlp'] ->
    ['L0H1', 'L1H0']."""
    return list(dict.fromkeys(h for n in names if (h := _head(n))))


def order(name: str) -> tuple[str, int, int]:
    """'L10H2' -> ('', 10, 2); 'cross.L1H0' -> ('cross', 1, 0)."""
    m = _HEAD.fullmatch(name)
    return m.group(1) or "", int(m.group(2)), int(m.group(3))


def rank(name: str) -> tuple[int, int, int, int]:
    """A head box's order: layer by layer, an encoder's heads first, then per decoder layer its self-attention's
    heads and its cross-attention's: 'enc.L1H0' < 'dec.L0H3' < 'cross.L0H0' < 'dec.L1H0'."""
    stack, layer, head = order(name)
    return int(stack in ("dec", "cross")), layer, int(stack == "cross"), head

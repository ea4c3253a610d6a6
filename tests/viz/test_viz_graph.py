"""Graph figures: every kept edge drawn once with its weight, tokens by position, labels escaped."""
import numpy as np
import plotly.graph_objects as go
import pytest

from analysis.graph import layered_graph, token_graph
from viz.graph import collectors_figure, layered_figure, matrices_figure, token_graph_figure

M = np.array([[0.6, 0.3, 0.1], [0.2, 0.2, 0.6], [0.5, 0.0, 0.5]])
TOKENS = ["<b>", "cat", "<b>"]  # HTML and a repeat


def _hover_dots(fig):
    """The trace of per-edge hover dots (its hover reads 'query → key: weight')."""
    (dots,) = [t for t in fig.data if t.mode == "markers" and t.hovertext and "→" in t.hovertext[0]]
    return dots


def test_columns_layout_draws_each_edge_once():
    g = token_graph(M, TOKENS, threshold=0.2)
    fig = token_graph_figure(g, "columns")
    dots = _hover_dots(fig)
    assert len(dots.x) == g.number_of_edges() == 7
    assert "&lt;b&gt; ·0 → &lt;b&gt; ·2: 0.100" not in dots.hovertext  # below the threshold
    assert "cat ·1 → &lt;b&gt; ·2: 0.600" in dots.hovertext
    nodes = [t for t in fig.data if t.mode == "markers+text"]
    assert [list(n.text) for n in nodes] == [["&lt;b&gt; ·0", "cat ·1", "&lt;b&gt; ·2"]] * 2
    assert list(nodes[0].x) == [0.0] * 3 and list(nodes[1].x) == [1.0] * 3
    assert list(nodes[0].y) == [0.0, -1.0, -2.0]
    lines = [t for t in fig.data if t.mode == "lines"]
    widths = [t.line.width for t in lines]
    assert widths == sorted(widths) and len(set(widths)) == len(widths)  # heavier band, thicker line


def test_columns_are_titled_and_the_legend_says_what_an_edge_is_and_which_were_kept():
    fig = token_graph_figure(token_graph(M, TOKENS, threshold=0.2), "columns")
    heads = {a.text: a.x for a in fig.layout.annotations}
    assert heads == {"<b>queries (layer output)</b>": 0.0, "<b>keys (layer input)</b>": 1.0}
    assert fig.layout.yaxis.range[1] > 0.6  # the titles sit above the first token, inside the plot
    legend = fig.layout.legend.title.text
    assert "Attention weight" in legend and "thicker" in legend and "weight ≥ 0.20" in legend
    bands = [t for t in fig.data if t.mode == "lines"]
    assert all(t.showlegend for t in bands) and bands[-1].name == "0.50–0.60"  # each band named by its weights
    top = token_graph_figure(token_graph(M, TOKENS, top_k=2), "circular").layout.legend.title.text.replace("<br>", " ")
    assert "each query's 2 heaviest keys" in top and "near" in top  # which end is the key's, without columns


@pytest.mark.parametrize("layout", ["circular", "force"])
def test_other_layouts(layout):
    g = token_graph(M, TOKENS, threshold=0.2)
    a, b = token_graph_figure(g, layout), token_graph_figure(g, layout)
    self_loops = sum(1 for u, v in g.edges if u == v)
    assert len(_hover_dots(a).x) == g.number_of_edges() - self_loops  # a self-loop shows in the node's hover
    assert np.allclose(_hover_dots(a).x, _hover_dots(b).x)  # seeded: the same picture every run
    assert any("to itself: 0.600" in h for h in a.data[-1].hovertext)


def test_cross_attention_columns():
    m = np.array([[0.7, 0.2, 0.1, 0.0], [0.1, 0.1, 0.4, 0.4]])
    g = token_graph(m, ["x", "y"], key_tokens=["a", "b", "c", "d"], top_k=2)
    fig = token_graph_figure(g, "columns")
    nodes = [t for t in fig.data if t.mode == "markers+text"]
    assert len(nodes[0].x) == 2 and len(nodes[1].x) == 4
    assert len(_hover_dots(fig).x) == 4
    assert [a.text for a in fig.layout.annotations] == ["<b>queries (decoder steps)</b>", "<b>keys (source tokens)</b>"]
    with pytest.raises(ValueError):
        token_graph_figure(g, "spiral")


def test_layered_figure_rows_and_edges():
    a = np.random.default_rng(0).dirichlet(np.ones(3), size=(2, 3))  # (L, T, T)
    g = layered_graph(a, TOKENS, top_k=2)
    fig = layered_figure(g)
    assert len(_hover_dots(fig).x) == 2 * 3 * 2
    assert list(fig.layout.yaxis.ticktext) == ["input", "after L0", "after L1"]
    assert list(fig.layout.xaxis.ticktext) == ["&lt;b&gt; ·0", "cat ·1", "&lt;b&gt; ·2"]


def test_matrices_and_collectors():
    fig = matrices_figure([("raw", M), ("rollout", M.T), ("flow", M)], TOKENS)
    heat = [t for t in fig.data if isinstance(t, go.Heatmap)]
    assert len(heat) == 3 and np.allclose(heat[1].z, M.T)
    assert [h.coloraxis for h in heat] == ["coloraxis", "coloraxis2", "coloraxis3"]  # own range per panel
    strength = M.sum(0)[None].repeat(2, 0)  # (L, T)
    assert len(collectors_figure(strength, strength / 3, TOKENS).data) == 2
    assert len(collectors_figure(strength, None, TOKENS).data) == 1

"""Graph builders: node and edge counts at a threshold / top-k, and strengths against networkx and formulas."""
import networkx as nx
import numpy as np
import pytest

from analysis.flow import max_flow_values
from analysis.graph import in_strength, keep_edges, layer_matrix, layered_graph, pagerank, token_graph
from analysis.rollout import mix_residual

M = np.array(
    [
        [0.70, 0.20, 0.10, 0.00],
        [0.25, 0.25, 0.25, 0.25],
        [0.05, 0.15, 0.30, 0.50],
        [0.40, 0.40, 0.10, 0.10],
    ]
)
TOKENS = ["the", "cat", "the", "."]  # a repeated token must still give its own node


def test_keep_edges_docstring_example():
    assert keep_edges(np.array([[0.7, 0.3], [0.1, 0.9]]), threshold=0.2).tolist() == [[True, True], [False, True]]


def test_self_attention_graph_counts():
    g = token_graph(M, TOKENS, threshold=0.2)
    assert g.number_of_nodes() == 4
    assert g.number_of_edges() == int((M >= 0.2).sum()) == 10
    assert [g.nodes[i]["token"] for i in range(4)] == TOKENS
    assert g.has_edge(2, 3) and g[2][3]["weight"] == 0.5
    assert g.has_edge(0, 0)  # attending to itself is a self-loop
    assert token_graph(M, TOKENS).number_of_edges() == 15  # threshold 0 drops only the exact zero


def test_top_k_per_query():
    g = token_graph(M, TOKENS, top_k=2)
    assert g.number_of_edges() == 8
    assert all(g.out_degree(i) == 2 for i in range(4))
    assert set(g.successors(3)) == {0, 1}  # the tie 0.40/0.40 is kept, 0.10s are dropped
    assert token_graph(M, TOKENS, threshold=0.3, top_k=2).number_of_edges() == 5


def test_cross_attention_is_bipartite():
    m = np.array([[0.6, 0.3, 0.1], [0.0, 0.5, 0.5]])  # 2 decoder steps over 3 source tokens
    g = token_graph(m, ["a", "b"], key_tokens=["x", "y", "z"], threshold=0.25)
    assert g.graph["bipartite"]
    assert g.number_of_nodes() == 5
    assert sorted(g.edges) == [(("q", 0), ("k", 0)), (("q", 0), ("k", 1)), (("q", 1), ("k", 1)), (("q", 1), ("k", 2))]
    with pytest.raises(ValueError):
        token_graph(m, ["a", "b"])


def test_layer_matrix_head_or_fused():
    rng = np.random.default_rng(0)
    w = rng.dirichlet(np.ones(5), size=(3, 4, 5)).astype(np.float32)  # (L, H, T, T)
    assert np.allclose(layer_matrix(w, 1, head=2), w[1, 2])
    assert np.allclose(layer_matrix(w, 1, fusion="max"), w[1].max(0))
    assert np.allclose(layer_matrix(w, 2), w[2].mean(0))


def test_layered_graph_carries_the_flow():
    rng = np.random.default_rng(4)
    a = rng.dirichlet(np.ones(4), size=(3, 4))  # (L, T, T)
    a_hat = mix_residual(a, 0.5)
    g = layered_graph(a_hat, ["a", "b", "c", "d"])
    assert g.number_of_nodes() == 4 * 4 and g.number_of_edges() == 3 * 16
    assert g[(3, 1)][(2, 0)]["weight"] == a_hat[2, 1, 0]
    assert layered_graph(a_hat, list("abcd"), top_k=1).number_of_edges() == 3 * 4
    # networkx max flow on the built graph equals our flow values
    flows = max_flow_values(a_hat)
    for i, j in [(0, 0), (1, 3), (3, 2)]:
        assert abs(nx.maximum_flow_value(g, (3, i), (0, j), capacity="weight") - flows[i, j]) < 1e-9


def test_in_strength_is_weighted_in_degree():
    got = in_strength(M[None])[0]
    g = token_graph(M, TOKENS)
    assert np.allclose(got, [g.in_degree(j, weight="weight") for j in range(4)])
    assert np.allclose(got, [1.4, 1.0, 0.75, 0.85])


def test_pagerank_matches_power_iteration():
    rng = np.random.default_rng(1)
    fused = rng.dirichlet(np.ones(6), size=(2, 6))  # (L, T, T), rows sum to 1
    got = pagerank(fused, alpha=0.85)
    for layer, p in zip(fused, got):
        r = np.full(6, 1 / 6)
        for _ in range(500):  # Brin & Page: r = (1 - a) / N + a * r P
            r = 0.15 / 6 + 0.85 * r @ layer
        assert np.allclose(p, r, atol=1e-8)
    with pytest.raises(ValueError, match="self-attention"):
        pagerank(np.ones((1, 2, 3)) / 3)

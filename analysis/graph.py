"""Attention matrices as networkx graphs, and which tokens collect attention.

Builds the graph of one layer (one head, or heads fused by mean|max|min) keeping the edges above a
threshold and/or the top-k per query token, the layered graph of all layers (the one attention flow
runs on), and per-layer in-strength and PageRank. It does not lay graphs out or draw them (viz.graph).

An edge u -> v with weight w means "query u attends to key v with weight w". Self-attention gives one
node per token (a token attending to itself is a self-loop); cross-attention gives a bipartite graph
with nodes ("q", i) and ("k", j).

    keep_edges([[.7, .3], [.1, .9]], threshold=0.2) -> [[True, True], [False, True]]
"""
from __future__ import annotations

import networkx as nx
import numpy as np

from analysis.rollout import fuse_heads
from limits.errors import UserError


def layer_matrix(weights: np.ndarray, layer: int, head: int | None = None, fusion: str = "mean") -> np.ndarray:
    """[L, H, Tq, Tk] -> [Tq, Tk] float64: one head of one layer, or all its heads fused (head=None)."""
    if head is not None:
        return np.asarray(weights[layer, head], dtype=np.float64)
    return fuse_heads(weights[layer : layer + 1], fusion)[0]


def keep_edges(matrix: np.ndarray, threshold: float = 0.0, top_k: int | None = None) -> np.ndarray:
    """Mask of the edges to draw: weight >= threshold (and > 0), and among each row's top_k if given."""
    m = np.asarray(matrix, dtype=np.float64)  # (Tq, Tk)
    keep = (m >= threshold) & (m > 0)
    if top_k is not None and top_k < m.shape[1]:
        order = np.argsort(-m, axis=1, kind="stable")  # ties go to the earlier key
        top = np.zeros_like(keep)
        np.put_along_axis(top, order[:, :top_k], True, axis=1)
        keep &= top
    return keep


def token_graph(
    matrix: np.ndarray,
    tokens: list[str],
    key_tokens: list[str] | None = None,
    threshold: float = 0.0,
    top_k: int | None = None,
    first: int = 0,
) -> nx.DiGraph:
    """Graph of one attention matrix [Tq, Tk]. key_tokens=None means self-attention (one node per
    token); otherwise cross-attention, drawn bipartite with nodes ("q", i) and ("k", j). first: the position
    of the matrix's first token in the text, when it is a window of a longer one (the nodes' "pos").
    The graph keeps the rule its edges were kept by (graph["threshold"], graph["top_k"]) for the figure's legend."""
    m = np.asarray(matrix, dtype=np.float64)  # (Tq, Tk)
    if m.shape != (len(tokens), len(key_tokens if key_tokens is not None else tokens)):
        raise ValueError(f"matrix {m.shape} does not match {len(tokens)} query and key tokens")
    g = nx.DiGraph(bipartite=key_tokens is not None, threshold=threshold, top_k=top_k)
    if key_tokens is None:
        g.add_nodes_from((i, {"token": t, "pos": first + i}) for i, t in enumerate(tokens))
        query, key = (lambda i: i), (lambda j: j)
    else:
        g.add_nodes_from((("q", i), {"token": t, "pos": i, "side": "query"}) for i, t in enumerate(tokens))
        g.add_nodes_from((("k", j), {"token": t, "pos": j, "side": "key"}) for j, t in enumerate(key_tokens))
        query, key = (lambda i: ("q", i)), (lambda j: ("k", j))
    rows, cols = np.nonzero(keep_edges(m, threshold, top_k))
    g.add_weighted_edges_from((query(i), key(j), float(m[i, j])) for i, j in zip(rows, cols))
    return g


def layered_graph(
    matrices: np.ndarray, tokens: list[str], threshold: float = 0.0, top_k: int | None = None
) -> nx.DiGraph:
    """All layers at once: node (l, i) is token i after layer l (l = 0 is the input), and (l, i) -> (l-1, j)
    carries matrices[l-1][i, j]. matrices [L, T, T], layer 1 first; attention flow runs on this graph."""
    a = np.asarray(matrices, dtype=np.float64)  # (L, T, T)
    g = nx.DiGraph()
    for l in range(a.shape[0] + 1):
        g.add_nodes_from(((l, i), {"token": t, "pos": i, "layer": l}) for i, t in enumerate(tokens))
    for l in range(1, a.shape[0] + 1):
        rows, cols = np.nonzero(keep_edges(a[l - 1], threshold, top_k))
        g.add_weighted_edges_from(((l, i), (l - 1, j), float(a[l - 1, i, j])) for i, j in zip(rows, cols))
    return g


def in_strength(fused: np.ndarray) -> np.ndarray:
    """[L, Tq, Tk] -> [L, Tk]: the attention each key token receives per layer (column sums)."""
    return np.asarray(fused, dtype=np.float64).sum(axis=1)


def pagerank(fused: np.ndarray, alpha: float = 0.85) -> np.ndarray:
    """[L, T, T] -> [L, T]: PageRank of each token in each layer's graph, following attention from
    query to key; a high score marks a token that attention keeps flowing into (an attention sink)."""
    a = np.asarray(fused, dtype=np.float64)  # (L, T, T)
    if a.shape[1] != a.shape[2]:
        raise UserError("PageRank needs self-attention: a cross-attention graph has no walks back to the queries")
    out = np.empty(a.shape[:2])
    for l, layer in enumerate(a):
        g = nx.from_numpy_array(layer, create_using=nx.DiGraph)  # edge i -> j weighted layer[i, j]
        ranks = nx.pagerank(g, alpha=alpha, weight="weight", tol=1e-10)
        out[l] = [ranks[i] for i in range(a.shape[1])]
    return out

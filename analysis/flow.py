"""Attention flow (Abnar & Zuidema 2020): maximum flow through the layered attention graph.

The graph has one row of T nodes per layer boundary; node i of layer l has an edge to node j of
layer l-1 with capacity A^_l[i, j] (heads fused, residual mixed in, see analysis.rollout). flow[i, j]
is the maximum flow from top-layer token i to input token j, each row normalised to sum to 1. It
needs square (self or causal) attention.

Each of the T * T (source, sink) problems is one call of scipy's Dinic maximum flow (compiled) on
the same sparse graph. Dinic needs integer capacities, so capacities are fixed-point numbers with
30 fractional bits: the flows are exact for those capacities, and within T * 2^-30 (< 1e-7) of
the real-valued ones. It does not sample, iterate to a tolerance or approximate the cut.

    attention_flow(weights)          -> [T, T], rows sum to 1
    max_flow_values(a_hat)           -> [T, T] unnormalised maximum-flow values
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse
from scipy.sparse.csgraph import maximum_flow

from analysis.rollout import residual_attention

SCALE = 1 << 30  # fixed-point unit: a capacity of 1 is 2^30, so a row's total stays within int32


def attention_flow(
    weights: np.ndarray, residual: float = 0.5, fusion: str = "mean", *, progress: Callable[[float], None] | None = None
) -> np.ndarray:
    """Max-flow from each top-layer token to each input token, rows normalised -> [T, T].

    progress(fraction) is called after each top-layer token's row; callers decide by the size of the
    work (layers x tokens) whether to run it at all, never by a clock.
    """
    values = max_flow_values(residual_attention(weights, residual, fusion), progress=progress)  # (T, T)
    sums = values.sum(axis=-1, keepdims=True)  # (T, 1)
    return np.divide(values, sums, out=np.zeros_like(values), where=sums > 0)


def layered_graph(a_hat: np.ndarray) -> scipy.sparse.csr_array:
    """a_hat [L, T, T] -> int32 capacities on (L+1)*T nodes; node l*T + i is token i after layer l."""
    n_layers, n_tok, _ = a_hat.shape
    caps = np.rint(np.clip(a_hat, 0, None) * SCALE).astype(np.int64)  # (L, T, T)
    layer, i, j = np.nonzero(caps)
    src = (layer + 1) * n_tok + i                  # node i of layer l+1 ...
    dst = layer * n_tok + j                        # ... sends to node j of layer l
    n = (n_layers + 1) * n_tok
    return scipy.sparse.csr_array((caps[layer, i, j].astype(np.int32), (src, dst)), shape=(n, n))


def max_flow_values(a_hat: np.ndarray, *, progress: Callable[[float], None] | None = None) -> np.ndarray:
    """a_hat [L, T, T] capacities (layer 1 first) -> [T, T] max-flow values, top token i to input j."""
    n_layers, n_tok, _ = a_hat.shape
    if n_layers == 1:
        return a_hat[0].astype(np.float64)  # one edge from each source to each sink
    graph = layered_graph(a_hat)
    top = n_layers * n_tok
    values = np.zeros((n_tok, n_tok))
    for i in range(n_tok):
        for j in range(n_tok):
            values[i, j] = maximum_flow(graph, top + i, j, method="dinic").flow_value
        if progress is not None:
            progress((i + 1) / n_tok)
    return values / SCALE

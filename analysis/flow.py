"""Attention flow (Abnar & Zuidema 2020): maximum flow through the layered attention graph.

The graph has one row of T nodes per layer boundary; node i of layer l has an edge to node j of
layer l-1 with capacity A^_l[i, j] (heads fused, residual mixed in, see analysis.rollout). flow[i, j]
is the maximum flow from top-layer token i to input token j, each row normalised to sum to 1. It
needs square (self or causal) attention.

Each of the T * T (source, sink) problems is solved exactly by Dinic's algorithm on integer
capacities: fixed-point numbers with 30 fractional bits, so the flows are exact for those capacities
and within T * 2^-30 (< 1e-7) of the real-valued ones. It does not sample, iterate to a tolerance or
approximate the cut. A maximum-flow value is unique, so any exact algorithm on these integers gives
the same numbers as scipy's `maximum_flow` on the whole layered graph (the tests check both, and networkx).

Why it is fast (6 layers x 128 tokens are 16,384 problems; bench `flow_128` times them against the
previous solver, general Dinic on a CSR graph per problem, kept here as the tests' reference):
- Only what can carry flow is in the graph. The other top-layer tokens have no way in and the other
  input tokens no way out, so each problem is the middle layers (shared by all T * T problems) plus a
  source whose edges are row i of A^_L and a sink whose edges are column j of A^_1.
- The graph is layered: every edge goes one level down, so Dinic's first phase needs no search and no
  reverse edge, and on real attention it almost always reaches min(source capacity, sink capacity),
  which proves the flow maximal without a final search (analysis._layered).
- Room, flow and live tokens are bit sets, so a step costs T / 64 words instead of a scan past dead
  ends; a token hands its flow to several children in one visit instead of one path at a time, and in the
  first phase the last two steps down (where the flow fans out to every sink edge) are plain loops.
- Compiled (numba, cached on disk after the first call); flows are cleared entry by entry, the graph is
  never copied. Rows (top-layer tokens) run on `workers` threads (by default two on a laptop, one when
  hosted, as the graph page runs it); the compiled solver releases the GIL.

    attention_flow(weights)          -> [T, T], rows sum to 1
    max_flow_values(a_hat)           -> [T, T] unnormalised maximum-flow values
    dinic_flow_values(a_hat)         -> the same numbers by the previous solver (the tests' reference)
"""
from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import limits
from analysis.rollout import residual_attention

SCALE = 1 << 30  # fixed-point unit: a capacity of 1 is 2^30, so a row's total stays within int32


def attention_flow(
    weights: np.ndarray, residual: float = 0.5, fusion: str = "mean", *,
    progress: Callable[[float], None] | None = None, workers: int | None = None,
) -> np.ndarray:
    """Max-flow from each top-layer token to each input token, rows normalised -> [T, T].

    progress(fraction) is called after each top-layer token's row (it may raise to cancel); callers
    decide by the size of the work (layers x tokens) whether to run it at all, never by a clock.
    workers: threads for the rows; None is default_workers() (the numbers do not depend on it).
    """
    values = max_flow_values(residual_attention(weights, residual, fusion), progress=progress,
                             workers=workers)  # (T, T)
    sums = values.sum(axis=-1, keepdims=True)  # (T, 1)
    return np.divide(values, sums, out=np.zeros_like(values), where=sums > 0)


def fixed_point(a_hat: np.ndarray) -> np.ndarray:
    """[L, T, T] capacities -> int64 in units of 2^-30 (negative ones clipped to 0)."""
    return np.rint(np.clip(a_hat, 0, None) * SCALE).astype(np.int64)


def default_workers() -> int:
    """Threads for the rows when the caller names none: two on a laptop (or one CPU's worth), one when hosted."""
    return 1 if limits.hosted() else min(2, os.cpu_count() or 1)


def max_flow_values(
    a_hat: np.ndarray, *, progress: Callable[[float], None] | None = None, workers: int | None = None
) -> np.ndarray:
    """a_hat [L, T, T] capacities (layer 1 first) -> [T, T] max-flow values, top token i to input j."""
    n_layers, n_tok, _ = a_hat.shape
    if n_layers == 1:
        return a_hat[0].astype(np.float64)  # one edge from each source to each sink
    caps = fixed_point(a_hat)  # (L, T, T)
    middle = caps[-2:0:-1].astype(np.int32)  # (L-2, T, T): W[d] sends level d to d + 1, from the top
    from analysis._layered import solve_row  # compiled on first use, then cached on disk

    def row(i: int, out: np.ndarray) -> None:
        solve_row(caps[-1, i], middle, caps[0], out)

    return _rows(row, n_tok, progress, default_workers() if workers is None else workers) / SCALE


def dinic_flow_values(
    a_hat: np.ndarray, *, progress: Callable[[float], None] | None = None, workers: int = 1
) -> np.ndarray:
    """The previous solver, kept as the reference: general Dinic from scratch for each of the T * T problems.

    Same numbers as max_flow_values (a maximum-flow value is unique), several times slower at 128 tokens.
    """
    n_layers, n_tok, _ = a_hat.shape
    if n_layers == 1:
        return a_hat[0].astype(np.float64)
    caps = fixed_point(a_hat)  # (L, T, T)
    g = _Residual(caps)
    from analysis._dinic import solve_row

    def row(i: int, out: np.ndarray) -> None:
        solve_row(g.n, g.head, g.to, g.rev, g.cap, g.layers, g.source_edges, g.sink_edges, caps[-1, i], caps[0], out)

    return _rows(row, n_tok, progress, workers) / SCALE


def _rows(row: Callable[[int, np.ndarray], None], n_tok: int, progress: Callable[[float], None] | None,
          workers: int) -> np.ndarray:
    """Run row(i, values[i]) for every top-layer token, on `workers` threads, reporting progress in order."""
    values = np.zeros((n_tok, n_tok), np.int64)
    if workers <= 1:
        for i in range(n_tok):
            row(i, values[i])
            if progress is not None:
                progress((i + 1) / n_tok)
        return values
    with ThreadPoolExecutor(workers) as pool:
        futures = [pool.submit(row, i, values[i]) for i in range(n_tok)]
        try:
            for done, future in enumerate(futures, 1):
                future.result()
                if progress is not None:
                    progress(done / n_tok)
        finally:  # a progress callback that raises (cancel) leaves no row waiting to run
            for future in futures:
                future.cancel()
    return values


class _Residual:
    """The residual graph shared by all T * T problems: node 0 the source, 1 + m*T + k token k of the m-th
    middle boundary from the top (boundaries L-1 .. 1), the last node the sink. Edges in CSR order by tail,
    each with its reverse (rev); the T source edges and T sink edges start at capacity 0 and are set per problem.

    [L, T, T] int64 capacities -> head (n+1,), to (2E,), rev (2E,), cap (2E,) int64, layers (n,),
    source_edges (T,), sink_edges (T,)
    """

    def __init__(self, caps: np.ndarray) -> None:
        n_layers, T, _ = caps.shape
        self.n = 2 + (n_layers - 1) * T
        sink = self.n - 1
        tails, heads, weights = [np.zeros(T, np.int64)], [1 + np.arange(T)], [np.zeros(T, np.int64)]
        for m in range(n_layers - 2):              # boundary L-1-m sends to L-2-m through A^ of layer L-1-m
            layer = caps[n_layers - 2 - m]          # (T, T)
            i, j = np.nonzero(layer)
            tails.append(1 + m * T + i)
            heads.append(1 + (m + 1) * T + j)
            weights.append(layer[i, j])
        tails.append(1 + (n_layers - 2) * T + np.arange(T))
        heads.append(np.full(T, sink))
        weights.append(np.zeros(T, np.int64))
        tail, head, cap = (np.concatenate(x) for x in (tails, heads, weights))   # (E,) forward edges
        n_edges = len(tail)
        both_tail = np.concatenate([tail, head])                                 # (2E,) forward, then reverse
        order = np.argsort(both_tail, kind="stable")
        position = np.empty(2 * n_edges, np.int64)
        position[order] = np.arange(2 * n_edges)                                 # edge -> its CSR slot
        self.to = np.concatenate([head, tail])[order]
        self.cap = np.concatenate([cap, np.zeros(n_edges, np.int64)])[order]
        self.rev = np.empty(2 * n_edges, np.int64)
        self.rev[position[:n_edges]] = position[n_edges:]
        self.rev[position[n_edges:]] = position[:n_edges]
        self.head = np.concatenate([[0], np.cumsum(np.bincount(both_tail, minlength=self.n))]).astype(np.int64)
        self.source_edges = position[:T]
        self.sink_edges = position[n_edges - T:n_edges]
        self.layers = np.concatenate([[0], np.repeat(np.arange(1, n_layers), T), [n_layers]]).astype(np.int64)

"""Attention flow (Abnar & Zuidema 2020): maximum flow through the layered attention graph.

The graph has one row of T nodes per layer boundary; node i of layer l has an edge to node j of
layer l-1 with capacity A^_l[i, j] (heads fused, residual mixed in, see analysis.rollout). flow[i, j]
is the maximum flow from top-layer token i to input token j, each row normalised to sum to 1. The
values are exact maximum flows up to float64 rounding (amounts under EPS count as zero); nothing is
sampled or iterated to a tolerance. It needs square (self or causal) attention.

All T * T (source, sink) problems are solved together on numpy arrays by push-relabel. Each round
labels every node with its exact residual distance to the sink (a backward breadth-first search,
one batched matmul per step), then sweeps the labels downwards, every node splitting its excess
over its admissible edges in proportion to their residual capacity. Only the flow value is needed,
so excess that can no longer reach the sink is dropped instead of going back to the source, and a
pair stops as soon as its flow equals the capacity of a simple cut (_cut_bound). A starting preflow
already aimed at the sink (_first_sweep), and solving each pair in whichever direction starts with
less excess, cut the rounds needed. 6 layers x 32 tokens of MiniLM attention: about 1 s.

    attention_flow(weights)          -> [T, T], rows sum to 1
    max_flow_values(a_hat)           -> [T, T] unnormalised maximum-flow values
"""
from __future__ import annotations

import time

import numpy as np
import scipy.sparse

from analysis.rollout import residual_attention

EPS = 1e-12  # amounts below this are float dust left by proportional splits, not flow
_CHUNK_ELEMENTS = 1 << 22  # edge-flow entries held at once (32 MiB of float64)
_UNREACHED = np.iinfo(np.int32).max


class FlowTooSlow(RuntimeError):
    """Raised when the flow would not finish within the caller's time limit."""


def attention_flow(
    weights: np.ndarray, residual: float = 0.5, fusion: str = "mean", *, time_limit: float | None = None
) -> np.ndarray:
    """Max-flow from each top-layer token to each input token, rows normalised -> [T, T].

    time_limit (seconds): raise FlowTooSlow once it has run that long, or once the share of pairs
    done so far shows that it would.
    """
    values = max_flow_values(residual_attention(weights, residual, fusion), time_limit=time_limit)  # (T, T)
    sums = values.sum(axis=-1, keepdims=True)  # (T, 1)
    return np.divide(values, sums, out=np.zeros_like(values), where=sums > 0)


def max_flow_values(a_hat: np.ndarray, *, time_limit: float | None = None) -> np.ndarray:
    """a_hat [L, T, T] capacities (layer 1 first) -> [T, T] max-flow values, top token i to input j.

    A flow from i to j is also a flow from j to i in the reversed graph (layers in reverse order,
    matrices transposed). Each pair is solved in the direction that starts with less excess, the
    source's out-capacity or the sink's in-capacity: excess that cannot arrive only costs work.
    """
    n_layers, n_tok, _ = a_hat.shape
    if n_layers == 1:
        return a_hat[0].copy()  # one edge from each source to each sink
    n_pairs = n_tok * n_tok
    pairs_per_chunk = max(1, _CHUNK_ELEMENTS // max(1, (n_layers - 2) * n_pairs))
    sources, sinks = np.divmod(np.arange(n_pairs), n_tok)
    backward = a_hat[0].sum(axis=0)[sinks] < a_hat[-1].sum(axis=-1)[sources]  # (P,)
    reversed_a_hat = np.ascontiguousarray(a_hat[::-1].transpose(0, 2, 1))  # (L, T, T)
    jobs = [
        (a_hat, np.flatnonzero(~backward), sources, sinks),
        (reversed_a_hat, np.flatnonzero(backward), sinks, sources),  # i -> j is j -> i reversed
    ]
    values = np.empty(n_pairs)
    start, solved = time.perf_counter(), 0
    deadline = np.inf if time_limit is None else start + time_limit
    for graph, pairs, tops, bottoms in jobs:
        for lo in range(0, len(pairs), pairs_per_chunk):
            chunk = pairs[lo : lo + pairs_per_chunk]
            done = _pair_flows(graph, tops[chunk], bottoms[chunk], deadline)
            solved += len(chunk)
            if done is None or start + (time.perf_counter() - start) * n_pairs / solved > deadline:
                raise FlowTooSlow(  # out of time, or the chunks so far say the rest would be
                    f"attention flow over {n_layers} layers x {n_tok} tokens would take more than {time_limit:g} s"
                )
            values[chunk] = done
    return values.reshape(n_tok, n_tok)


def _pair_flows(a_hat: np.ndarray, sources: np.ndarray, sinks: np.ndarray, deadline: float) -> np.ndarray | None:
    """Max-flow values for P (source, sink) pairs, all pushed together -> [P], None past the deadline."""
    net = _Network(a_hat, sources, sinks)
    values = np.zeros(len(sources))
    alive = np.arange(len(sources))  # original index of each pair still held by net
    bound = _cut_bound(a_hat, sources, sinks)  # (P,) a cut: reaching it proves the flow maximal
    while True:
        label = net.distance_labels()  # (Q, n, T)
        # excess that cannot reach the sink never will: pushes only join nodes that can, so nothing
        # ever opens a residual edge from the cut-off nodes into the rest. Forget it.
        net.excess[label == _UNREACHED] = 0.0
        pending = net.excess > EPS  # (Q, n, T): excess that can still arrive
        value = net.flow_sink.sum(axis=-1)  # (Q,)
        going = pending.any(axis=(1, 2)) & (value < bound[alive] - EPS)
        values[alive[~going]] = value[~going]
        if not going.any():
            return values
        if time.perf_counter() > deadline:
            return None
        if going.sum() < 0.75 * len(going):  # drop finished pairs so later rounds touch only live ones
            net.keep(going)
            alive, label, pending = alive[going], label[going], pending[going]
        for k in range(int(label[pending].max()), 0, -1):
            net.push(k, label)


def _cut_bound(a_hat: np.ndarray, sources: np.ndarray, sinks: np.ndarray) -> np.ndarray:
    """Capacity of the cheapest of a few simple cuts per pair -> (P,). Next to the source, each top
    node loses either its edge from the source or all its own out-edges; next to the sink, each
    bottom node loses either its edge into the sink or all its in-edges. Reaching it proves a flow maximal."""
    top = np.minimum(a_hat[-1], a_hat[-2].sum(axis=-1)[None, :]).sum(axis=-1)  # (T,) per source
    bottom = np.minimum(a_hat[0], a_hat[1].sum(axis=0)[:, None]).sum(axis=0)  # (T,) per sink
    return np.minimum(top[sources], bottom[sinks])


class _Network:
    """P layered networks between the source and the sink, as flows on numpy arrays.

    Only inner layer boundaries hold nodes (n = L - 1 rows of T, row 0 next to the input): the
    source's edges start saturated, so their flow sits as excess on row n-1, and each pair's sink
    edges are one column of A^_1.
    """

    def __init__(self, a_hat: np.ndarray, sources: np.ndarray, sinks: np.ndarray) -> None:
        n_pairs, n_tok = len(sources), a_hat.shape[1]
        self.cap = a_hat[1:-1]  # (n-1, T, T): edge upper i -> lower j between rows b+1 and b
        self.cap_sink = np.ascontiguousarray(a_hat[0][:, sinks].T)  # (P, T): row-0 node i -> sink
        self.flow = np.empty((n_pairs,) + self.cap.shape)  # (P, n-1, T, T)
        self.excess = np.zeros((n_pairs, a_hat.shape[0] - 1, n_tok))  # (P, n, T)
        self.excess[:, -1] = a_hat[-1][sources]
        self._first_sweep()

    def _first_sweep(self) -> None:
        """A starting preflow that already heads for the sink: each node splits its excess over
        edges in proportion to min(capacity, what the node below could pass on to the sink), and a
        node accepts no more than it could pass on. Whatever does not fit stays as excess."""
        onward = [self.cap_sink]  # per row: an upper bound on what each node can pass to the sink
        for b in range(self.cap.shape[0]):
            onward.append(np.minimum(self.cap[b], onward[b][:, None, :]).sum(axis=-1))  # (P, T)
        for b in range(self.cap.shape[0] - 1, -1, -1):
            have = self.excess[:, b + 1]  # (P, T)
            useful = np.minimum(self.cap[b], onward[b][:, None, :])  # (P, T, T)
            offer = useful * _fraction(have, useful.sum(axis=-1))[:, :, None]  # (P, T, T)
            sent = offer * _fraction(onward[b], offer.sum(axis=1))[:, None, :]  # (P, T, T)
            self.flow[:, b] = sent
            self.excess[:, b + 1] = np.maximum(have - sent.sum(axis=-1), 0.0)
            self.excess[:, b] += sent.sum(axis=1)
        self.flow_sink = np.minimum(self.excess[:, 0], self.cap_sink)  # (P, T)
        self.excess[:, 0] = np.maximum(self.excess[:, 0] - self.flow_sink, 0.0)

    def keep(self, rows: np.ndarray) -> None:
        """Forget the pairs where rows is False."""
        self.flow, self.excess = self.flow[rows], self.excess[rows]
        self.cap_sink, self.flow_sink = self.cap_sink[rows], self.flow_sink[rows]

    def distance_labels(self) -> np.ndarray:
        """Residual distance of inner nodes to the sink -> (Q, n, T). Exact for every node with excess
        and every node closer than one; the search stops early once all nodes with excess are reached,
        so _UNREACHED means "cannot reach the sink" only for nodes with excess, or when none are left."""
        # residual edges as float32 0/1 (same tests as in _send), so one breadth-first step is a matmul
        down = np.less(self.flow, self.cap - EPS, out=np.empty(self.flow.shape, np.float32), casting="unsafe")
        up = np.greater(self.flow, EPS, out=np.empty(self.flow.shape, np.float32), casting="unsafe")
        label = np.full(self.excess.shape, _UNREACHED, dtype=np.int32)  # (Q, n, T)
        front = np.zeros(label.shape, dtype=np.float32)  # (Q, n, T) as 0/1, so a step is a matmul
        front[:, 0] = self.cap_sink - self.flow_sink > EPS
        waiting = self.excess > EPS  # (Q, n, T) nodes with excess not yet reached
        k = 1
        while True:
            hit = front > 0
            if not hit.any():
                return label
            label[hit] = k
            waiting &= ~hit
            if not waiting.any():
                return label
            k += 1
            reach = np.zeros_like(front)
            for b in range(down.shape[1]):  # labels alternate parity between rows: one direction per block
                if (b - k) % 2 == 0:  # row b holds the front: its upper neighbours step down into it
                    reach[:, b + 1] += (down[:, b] @ front[:, b, :, None])[..., 0]
                else:  # row b+1 holds the front: its lower neighbours step back up into it
                    reach[:, b] += (front[:, b + 1, None, :] @ up[:, b])[:, 0]
            front = ((reach > 0) & (label == _UNREACHED)).astype(np.float32)

    def push(self, k: int, label: np.ndarray) -> None:
        """Every node labelled k sends its excess to neighbours labelled k-1, in place.

        Into the sink when k = 1; otherwise down first, then back up along edges that carry flow,
        each time split over the admissible edges in proportion to their residual capacity.
        """
        pair, row, node = np.nonzero((label == k) & (self.excess > EPS))  # (R,) active nodes
        if len(pair) == 0:
            return
        n_rows, n_tok = self.excess.shape[1:]
        excess = self.excess.reshape(-1)
        at = (pair * n_rows + row) * n_tok + node  # flat index into excess
        if k == 1:  # only row-0 nodes with room into the sink are labelled 1
            sink_at = pair * n_tok + node
            flow_sink, cap_sink = self.flow_sink.reshape(-1), self.cap_sink.reshape(-1)
            room = cap_sink[sink_at] - flow_sink[sink_at]
            sent = np.minimum(excess[at], room)
            flow_sink[sink_at] = np.where(sent >= room, cap_sink[sink_at], flow_sink[sink_at] + sent)
            excess[at] = _dust_free(excess[at] - sent)
            return
        down = np.nonzero(row >= 1)[0]
        if len(down):
            p, r, u = pair[down], row[down] - 1, node[down]  # edge block r, upper node u: a row of flow
            edges = (p * (n_rows - 1) + r) * n_tok + u  # (R,) row of flow.reshape(-1, T)
            cap = self.cap.reshape(-1, n_tok)[r * n_tok + u]  # (R, T)
            self._send(k, self.flow.reshape(-1, n_tok), edges, cap, label[p, r], at[down], (p * n_rows + r) * n_tok)
        up = np.nonzero((row <= n_rows - 2) & (excess[at] > EPS))[0]
        if len(up):
            p, r, u = pair[up], row[up], node[up]  # edge block r, lower node u: a column of flow
            edges = ((p * (n_rows - 1) + r) * n_tok * n_tok + u)[:, None] + np.arange(n_tok) * n_tok  # (R, T)
            self._send(k, self.flow.reshape(-1), edges, None, label[p, r + 1], at[up], (p * n_rows + r + 1) * n_tok)

    def _send(self, k, flow, edges, cap, target_label, at, target_at) -> None:
        """Push from R nodes over their T edges: down where cap is given (room cap - flow), else back
        up (room = flow). flow[edges] is (R, T); target_at is the flat excess index of target 0."""
        excess = self.excess.reshape(-1)
        old = flow[edges]  # (R, T)
        if cap is None:  # back up: room is the flow to cancel
            room = np.where((target_label == k - 1) & (old > EPS), old, 0.0)  # (R, T)
        else:
            room = np.where((target_label == k - 1) & (old < cap - EPS), cap - old, 0.0)  # (R, T)
        total = room.sum(axis=-1)  # (R,)
        share = _fraction(excess[at], total)  # (R,)
        sent = room * share[:, None]  # (R, T)
        full = share >= 1.0  # these rows saturate every admissible edge: set exactly, leaving no dust
        new = old - sent if cap is None else old + sent
        new[full] = np.where(room[full] > 0, 0.0 if cap is None else cap[full], old[full])
        flow[edges] = new
        excess[at] = _dust_free(excess[at] - total * share)
        # senders come sorted by (pair, row), so the rows that feed one target row of T nodes are
        # contiguous: summing them is a (B, R) 0/1 matrix with one run of ones per row, times sent
        first = np.flatnonzero(np.r_[True, target_at[1:] != target_at[:-1]])  # (B,)
        runs = scipy.sparse.csr_array((np.ones(len(at)), np.arange(len(at)), np.r_[first, len(at)]))
        excess.reshape(-1, sent.shape[1])[target_at[first] // sent.shape[1]] += runs @ sent  # (B, T)


def _fraction(want: np.ndarray, room: np.ndarray) -> np.ndarray:
    """min(1, want / room), 0 where there is no room: [0.3, 2.0] / [0.6, 1.0] -> [0.5, 1.0]."""
    return np.minimum(1.0, np.divide(want, room, out=np.zeros_like(want), where=room > 0))


def _dust_free(amount: np.ndarray) -> np.ndarray:
    return np.where(amount > EPS, amount, 0.0)

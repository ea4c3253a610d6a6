"""Dinic's maximum flow, compiled with numba: the previous solver, analysis.flow.dinic_flow_values (the reference).

Works on a residual graph in flat CSR arrays (head, to, rev, cap; see analysis.flow._Residual), integer
capacities, one source and one sink; it does not build graphs or normalise anything. Both functions
release the GIL, so rows of the flow matrix can run on threads. Compiled on the first call of a process
and cached on disk next to this file (numba's cache), so later processes load the machine code.

    solve_row(n, head, to, rev, cap, layers, source_edges, sink_edges, caps[-1, i], caps[0], out)  # out[j] for each j
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def dinic(n, head, to, rev, cap, source, sink, bound, layers):
    """Maximum flow from source to sink on the residual graph cap (changed in place), stopping at bound.

    layers (n,): each node's distance from the source in the graph without flow, which in a layered graph
    is its layer: the first phase's levels, so the first breadth-first search is skipped.
    """
    level = layers.copy()
    current = np.empty(n, np.int64)
    queue = np.empty(n, np.int64)
    path = np.empty(n, np.int64)   # edges from the source to the node the search is at
    total, phase = 0, 0
    while total < bound:
        if phase > 0:
            level[:] = -1                               # breadth-first levels over edges with room
            level[source] = 0
            queue[0], first, last = source, 0, 1
            while first < last:
                u = queue[first]
                first += 1
                for e in range(head[u], head[u + 1]):
                    if cap[e] > 0 and level[to[e]] < 0:
                        level[to[e]] = level[u] + 1
                        queue[last] = to[e]
                        last += 1
            if level[sink] < 0:
                break
        phase += 1
        current[:] = head[:n]
        depth, u = 0, source                            # depth-first blocking flow along the levels
        while total < bound:
            if u == sink:
                pushed = cap[path[0]]
                for k in range(1, depth):
                    pushed = min(pushed, cap[path[k]])
                back = depth
                for k in range(depth):
                    e = path[k]
                    cap[e] -= pushed
                    cap[rev[e]] += pushed
                    if cap[e] == 0 and k < back:
                        back = k
                total += pushed
                depth = back                            # go on from the first saturated edge's tail
                u = to[rev[path[back]]]
                continue
            moved = False
            while current[u] < head[u + 1]:
                e = current[u]
                if cap[e] > 0 and level[to[e]] == level[u] + 1:
                    path[depth] = e
                    depth += 1
                    u = to[e]
                    moved = True
                    break
                current[u] += 1
            if not moved:                               # a dead end: never visit it again this phase
                if depth == 0:
                    break
                level[u] = -1
                depth -= 1
                u = to[rev[path[depth]]]
                current[u] += 1
    return total


@njit(cache=True, nogil=True)
def solve_row(n, head, to, rev, cap0, layers, source_edges, sink_edges, source_caps, sink_caps, out):
    """out[j] = maximum flow from the source with capacities source_caps (T,) to the sink with sink_caps[:, j]."""
    out_cap = source_caps.sum()
    for j in range(sink_caps.shape[1]):
        cap = cap0.copy()
        cap[source_edges] = source_caps
        cap[sink_edges] = sink_caps[:, j]
        out[j] = dinic(n, head, to, rev, cap, 0, n - 1, min(out_cap, sink_caps[:, j].sum()), layers)

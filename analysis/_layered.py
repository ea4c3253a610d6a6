"""Exact maximum flow on a layered attention graph, compiled with numba: the inner loop of analysis.flow.

The graph (see analysis.flow): a source, D + 1 levels of T tokens, a sink. The source's edges are row i of
A^_L, level d sends to level d + 1 through the dense [T, T] capacities W[d], and the last level's token k
sends b[k] = A^_1[k, j] to the sink. It runs Dinic's algorithm on that shape:

- Every edge goes one level down, so the first phase needs no search (a token's level is its distance from
  the source) and no reverse edge; on real attention it usually reaches the trivial cut
  min(source capacity, sink capacity) on its own, which proves the flow maximal.
- Which edges have room, which carry flow and which tokens are still live at each distance are bit sets
  (T bits per token), so a step down or up costs T / 64 words, not a scan of the token's T edges past
  dead ends. A token tries its residual edge (the widest) first.
- Later phases (a smaller cut inside the graph) search breadth-first over those bit sets: down where an
  edge has room, up where it carries flow.
- The depth-first search hands a token's flow to several children in one visit (a stack of frames:
  what a token was asked for and what it has passed on), not one source-to-sink path at a time.
- In the first phase the last two steps down (the next-to-last level's tokens and the last level's, which hand
  flow straight to the sink) run as plain loops inside their parent's visit, with no frame of their own: most of
  the search's pushes are there, as the flow fans out to every sink edge (at 128 tokens on MiniLM this halves the
  time; the later phases, a tenth of the work, keep the general frames).
- Flows live in dense [D, T, T] arrays shared by the row's T problems; only the entries the search
  touched are cleared between problems (no copy of the graph per problem).

It does not build the graphs, scale capacities to integers or normalise anything (analysis.flow does).

    solve_row(a, W, B, out)   # out[j] = max flow from capacities a (T,) through W (D, T, T) to B[:, j], each j
"""
from __future__ import annotations

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros

ONE = np.uint64(1)


@njit(inline="always")
def _bit(v):
    return ONE << np.uint64(v & 63)


@njit(inline="always")
def _first(x, i, k, y, d, lev):
    """Lowest v set in both x[i, k] and y[d, lev] (bit sets), or -1: [0b0110], [0b0100] -> 2."""
    for w in range(x.shape[2]):
        m = x[i, k, w] & y[d, lev, w]
        if m != 0:
            return w * 64 + np.int64(trailing_zeros(m))
    return -1


@njit(cache=True, nogil=True)
def solve_row(a, W, B, out):
    """out[j] = maximum flow from a source with capacities a (T,) through W (D, T, T) to a sink with B[:, j].

    Integer capacities, so the result is exact.
    """
    T, D = a.shape[0], W.shape[0]
    levels, wn = D + 1, (T + 63) // 64
    n = levels * T                                  # node lev * T + u: token u at level lev
    full = np.zeros(wn, np.uint64)                  # all T tokens
    for v in range(T):
        full[v >> 6] |= _bit(v)
    room0 = np.zeros((D, T, wn), np.uint64)         # [d, u]: tokens v with W[d, u, v] > 0
    for d in range(D):
        for u in range(T):
            for v in range(T):
                if W[d, u, v] > 0:
                    room0[d, u, v >> 6] |= _bit(v)
    room = np.empty_like(room0)                     # [d, u]: tokens v whose edge from u still has room
    back = np.zeros((levels, T, wn), np.uint64)     # [lev, u]: tokens v of level lev-1 sending flow to u
    live = np.zeros((n + 2, levels, wn), np.uint64)  # [dist, lev]: live tokens of level lev at that distance
    unseen = np.empty((levels, wn), np.uint64)
    order_a = np.argsort(-a)
    flow_a = np.zeros(T, np.int64)                  # source -> level 0
    flow = np.zeros((D, T, T), W.dtype)             # level d -> level d + 1, [d, from, to]
    flat = flow.reshape(-1)
    flow_b = np.zeros(T, np.int64)                  # last level -> sink
    touched = np.empty(D * T * T, np.int64)         # flat indices of flow entries this problem used
    marked = np.zeros((D, T, T), np.bool_)
    flat_marked = marked.reshape(-1)
    dist = np.empty(n, np.int64)                    # distance from the source; -1: unreachable or dead
    level_dist = np.empty(n, np.int64)              # the first phase's distances: the levels
    for x in range(n):
        level_dist[x] = x // T + 1
    queue = np.empty(n, np.int64)
    s_lev = np.empty(n + 1, np.int64)               # the stack of the depth-first search: a node (level,
    s_tok = np.empty(n + 1, np.int64)               # token; the source is level -1), what it was asked to
    s_f = np.empty(n + 1, np.int64)                 # hand on, what it has handed on, and the child it is
    s_done = np.empty(n + 1, np.int64)              # asking now
    s_clev = np.empty(n + 1, np.int64)
    s_ctok = np.empty(n + 1, np.int64)
    out_cap = a.sum()
    for j in range(B.shape[1]):
        b = B[:, j]
        bound = min(out_cap, b.sum())
        room[:] = room0
        back[:] = 0
        n_touched, total, phase, top = 0, 0, 0, levels
        while total < bound:
            if phase == 0:                              # distances are levels: no search
                dist[:] = level_dist
                for lev in range(levels):
                    live[lev + 1, lev] = full
                sink_dist = levels + 1
            else:                                       # breadth-first over the residual graph
                live[:top + 2] = 0
                dist[:] = -1
                for lev in range(levels):
                    unseen[lev] = full
                sink_dist, last = n + 2, 0
                for u in range(T):
                    if a[u] > flow_a[u]:
                        dist[u] = 1
                        live[1, 0, u >> 6] |= _bit(u)
                        unseen[0, u >> 6] &= ~_bit(u)
                        queue[last] = u
                        last += 1
                first = 0
                while first < last:
                    x = queue[first]
                    first += 1
                    lev, u, dx = x // T, x % T, dist[x]
                    if lev == levels - 1 and b[u] > flow_b[u] and dx + 1 < sink_dist:
                        sink_dist = dx + 1
                    if dx + 1 >= sink_dist:
                        continue
                    top = max(top, dx + 1)
                    for side in range(2):               # down where an edge has room, up where one carries flow
                        to = lev + 1 if side == 0 else lev - 1
                        if to < 0 or to >= levels:
                            continue
                        edges = room[lev, u] if side == 0 else back[lev, u]
                        for w in range(wn):
                            m = edges[w] & unseen[to, w]
                            unseen[to, w] &= ~m
                            live[dx + 1, to, w] |= m
                            while m != 0:
                                v = w * 64 + np.int64(trailing_zeros(m))
                                m &= m - ONE
                                dist[to * T + v] = dx + 1
                                queue[last] = to * T + v
                                last += 1
                if sink_dist > n + 1:
                    break                               # no path left: the flow is maximal
            phase += 1
            cur_a, depth, ret = 0, 0, -1                # blocking flow: a token hands its flow to several children
            s_lev[0], s_tok[0], s_f[0], s_done[0] = -1, 0, bound - total, 0   # the source's frame
            while depth >= 0:
                lev, u = s_lev[depth], s_tok[depth]
                if ret >= 0:                            # a child handed on ret of what it was asked for
                    cl, v = s_clev[depth], s_ctok[depth]
                    if lev < 0:
                        flow_a[v] += ret
                    elif cl > lev:                      # down: (lev, u) -> (lev + 1, v)
                        if ret > 0:
                            if not marked[lev, u, v]:
                                marked[lev, u, v] = True
                                touched[n_touched] = (lev * T + u) * T + v
                                n_touched += 1
                            flow[lev, u, v] += ret
                            back[cl, v, u >> 6] |= _bit(u)
                            if flow[lev, u, v] == W[lev, u, v]:
                                room[lev, u, v >> 6] &= ~_bit(v)
                    elif ret > 0:                       # up: cancels flow (lev - 1, v) -> (lev, u)
                        flow[cl, v, u] -= ret
                        room[cl, v, u >> 6] |= _bit(u)
                        if flow[cl, v, u] == 0:
                            back[lev, u, v >> 6] &= ~_bit(v)
                    s_done[depth] += ret
                    ret = -1
                left = s_f[depth] - s_done[depth]
                if left == 0:
                    ret = s_done[depth]
                    depth -= 1
                    continue
                cl, v, req = -1, -1, 0                  # the next child, and how much to ask of it
                if lev < 0:
                    while cur_a < T and (dist[order_a[cur_a]] != 1 or a[order_a[cur_a]] == flow_a[order_a[cur_a]]):
                        cur_a += 1
                    if cur_a == T:
                        break                           # the source is cut off: the phase is over
                    cl, v = 0, order_a[cur_a]
                    req = min(left, a[v] - flow_a[v])
                else:
                    dx = dist[lev * T + u]
                    if lev == levels - 1:
                        if dx + 1 == sink_dist and b[u] > flow_b[u]:
                            r = min(left, b[u] - flow_b[u])   # into the sink
                            flow_b[u] += r
                            total += r
                            s_done[depth] += r
                            continue
                    elif phase == 1 and lev >= levels - 3:  # the last one or two steps down in one visit
                        two, lw = lev == levels - 3, levels - 1
                        lc = lev + 1 if two else lev    # the level that hands on to the last one
                        for w in range(wn if two else 1):
                            m = room[lev, u, w] & live[dx + 1, lc, w] if two else ONE
                            while m != 0 and left > 0:
                                if two:
                                    v = w * 64 + np.int64(trailing_zeros(m))
                                    m &= m - ONE
                                    want, dv = min(left, W[lev, u, v] - flow[lev, u, v]), dx + 1
                                else:
                                    v, m, want, dv = u, np.uint64(0), left, dx
                                got = 0
                                for w2 in range(wn):
                                    m2 = room[lc, v, w2] & live[dv + 1, lw, w2]
                                    while m2 != 0 and got < want:
                                        k = w2 * 64 + np.int64(trailing_zeros(m2))
                                        m2 &= m2 - ONE
                                        r = min(want - got, W[lc, v, k] - flow[lc, v, k], b[k] - flow_b[k])
                                        if r > 0:
                                            if not marked[lc, v, k]:
                                                marked[lc, v, k] = True
                                                touched[n_touched] = (lc * T + v) * T + k
                                                n_touched += 1
                                            flow[lc, v, k] += r
                                            back[lw, k, v >> 6] |= _bit(v)
                                            if flow[lc, v, k] == W[lc, v, k]:
                                                room[lc, v, w2] &= ~_bit(k)
                                            flow_b[k] += r
                                            got += r
                                        if flow_b[k] == b[k]:   # its sink edge is full: a dead end
                                            dist[lw * T + k] = -1
                                            live[dv + 1, lw, w2] &= ~_bit(k)
                                    if got == want:
                                        break
                                if got < want:                  # v can hand on no more: a dead end
                                    dist[lc * T + v] = -1
                                    live[dv, lc, v >> 6] &= ~_bit(v)
                                if two and got > 0:
                                    if not marked[lev, u, v]:
                                        marked[lev, u, v] = True
                                        touched[n_touched] = (lev * T + u) * T + v
                                        n_touched += 1
                                    flow[lev, u, v] += got
                                    back[lc, v, u >> 6] |= _bit(u)
                                    if flow[lev, u, v] == W[lev, u, v]:
                                        room[lev, u, w] &= ~_bit(v)
                                total += got
                                left -= got
                                s_done[depth] += got
                            if left == 0:
                                break
                        if left > 0:
                            dist[lev * T + u] = -1
                            live[dx, lev, u >> 6] &= ~_bit(u)
                        ret = s_done[depth]
                        depth -= 1
                        continue
                    else:
                        bit = _bit(u)
                        if room[lev, u, u >> 6] & live[dx + 1, lev + 1, u >> 6] & bit:
                            cl, v = lev + 1, u          # the residual edge, the widest
                        else:
                            v = _first(room, lev, u, live, dx + 1, lev + 1)
                            cl = lev + 1 if v >= 0 else -1
                        if cl >= 0:
                            req = min(left, W[lev, u, v] - flow[lev, u, v])
                    if cl < 0 and phase > 1 and lev > 0:
                        v = _first(back, lev, u, live, dx + 1, lev - 1)
                        if v >= 0:
                            cl = lev - 1
                            req = min(left, flow[cl, v, u])
                    if cl < 0:                          # a dead end: never visit it again this phase
                        dist[lev * T + u] = -1
                        live[dx, lev, u >> 6] &= ~_bit(u)
                        ret = s_done[depth]
                        depth -= 1
                        continue
                s_clev[depth], s_ctok[depth] = cl, v
                depth += 1
                s_lev[depth], s_tok[depth], s_f[depth], s_done[depth] = cl, v, req, 0
        out[j] = total
        for k in range(n_touched):                      # clear only what this problem touched
            flat[touched[k]] = 0
            flat_marked[touched[k]] = False
        flow_a[:] = 0
        flow_b[:] = 0
        live[:top + 2] = 0

"""Which heads attend alike: Jensen-Shannon distances between heads' attention maps (Clark et al. 2019, §6).

For two heads i, j and one query token q, JS(A_i[q], A_j[q]) = H(M) - (H(A_i[q]) + H(A_j[q])) / 2 with
M = (A_i[q] + A_j[q]) / 2, in bits (0 = identical rows, 1 = disjoint). js_pair_sums() sums it over a
sentence's query tokens, so corpus totals are sums of per-sentence sums; distance() turns the mean
into sqrt(JS), the Jensen-Shannon distance, which is a metric. Heads are then clustered (scipy,
average linkage) and laid out in 2-D by classical multidimensional scaling.
Does not run a model and does not say whether a head matters: two similar heads are candidates to
prune one of, to be checked with the Pruning view's measured importance.
"""
from __future__ import annotations

import numpy as np
from scipy.cluster import hierarchy
from scipy.spatial.distance import squareform


def _xlogx(x: np.ndarray) -> np.ndarray:
    return x * np.log2(np.maximum(x, 1e-30))


def js_pair_sums(weights: np.ndarray) -> np.ndarray:
    """weights [P, T, T] (P heads of one sentence) -> [P, P]: JS in bits summed over the T query rows.

    Loops over the first head of each pair so the working set stays small (P × T × T floats).
    """
    a = np.asarray(weights, dtype=np.float32)
    n = a.shape[0]
    neg_h = _xlogx(a).sum(-1)                                                    # (P, T): -entropy per row
    out = np.zeros((n, n))
    for i in range(n - 1):
        m = (a[i] + a[i + 1:]) * 0.5                                             # (P-i-1, T, T)
        js = (_xlogx(m).sum(-1) * -1 + (neg_h[i] + neg_h[i + 1:]) * 0.5).sum(-1)  # (P-i-1,)
        out[i, i + 1:] = out[i + 1:, i] = np.maximum(js, 0.0)
    return out


def distance(js_total: np.ndarray, rows: int) -> np.ndarray:
    """Summed JS over `rows` query rows -> Jensen-Shannon distance sqrt(mean JS), [P, P], zero diagonal."""
    return np.sqrt(np.clip(js_total / max(rows, 1), 0.0, 1.0))


def linkage(dist: np.ndarray) -> np.ndarray:
    """Average-linkage clustering of a [P, P] distance matrix (scipy's linkage format)."""
    return hierarchy.linkage(squareform(dist, checks=False), method="average")


def dendrogram(dist: np.ndarray, labels: list[str]) -> dict:
    """scipy's dendrogram coordinates (icoord, dcoord, ivl = leaf labels in order), without drawing."""
    return hierarchy.dendrogram(linkage(dist), labels=labels, no_plot=True)


def mds(dist: np.ndarray, dims: int = 2) -> np.ndarray:
    """Classical multidimensional scaling: points [P, dims] whose distances approximate `dist`."""
    n = dist.shape[0]
    centre = np.eye(n) - 1.0 / n
    b = -0.5 * centre @ (dist ** 2) @ centre                                     # (P, P) Gram matrix
    vals, vecs = np.linalg.eigh(b)
    top = np.argsort(vals)[::-1][:dims]
    return vecs[:, top] * np.sqrt(np.maximum(vals[top], 0.0))


def redundant(dist: np.ndarray, names: list[str], threshold: float = 0.3) -> list[dict]:
    """Pairs of heads closer than `threshold` (JS distance), closest first; each head named once as the
    twin of its nearest partner: [{"head": "L3 H2", "twin": "L3 H7", "distance": 0.12}, ...]."""
    d = dist + np.diag(np.full(len(dist), np.inf))
    pairs = []
    for i in range(len(d)):
        j = int(np.argmin(d[i]))
        if d[i, j] < threshold and (i < j or d[j].argmin() != i):
            pairs.append({"head": names[i], "twin": names[j], "distance": float(d[i, j])})
    return sorted(pairs, key=lambda p: p["distance"])

"""Queries and keys of one head in one picture, as AttentionViz draws them (Yeh et al. 2023, §4.1).

A head's weight from query q to key k is softmax over keys of q·k/√d, so only q·k matters, and only up
to a constant per query. normalise() uses that freedom: it scales queries by c and keys by 1/c so both
have the same mean norm (q·k unchanged), then translates every key by the same vector so the two
centroids coincide (each query's dot products all move by the same amount, so its ranking of keys
and its softmax do not change). After it, ‖q - k‖² = ‖q‖² + ‖k‖² - 2 q·k: with similar norms, a key
near a query is one the query attends to. project() embeds queries and keys together: PCA always
(numpy), t-SNE when scikit-learn is installed. Does not run a model: q and k come from the caller.
"""
from __future__ import annotations

import importlib.util

import numpy as np

from limits.errors import UserError


def normalise(q: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """q [Nq, d], k [Nk, d] -> (c·q, k/c + t): equal mean norms and centroids; each query's q·k moves by a constant."""
    q, k = np.asarray(q, np.float64), np.asarray(k, np.float64)
    c = np.sqrt(np.linalg.norm(k, axis=1).mean() / max(np.linalg.norm(q, axis=1).mean(), 1e-12))
    q, k = q * c, k / c
    return q, k + (q.mean(0) - k.mean(0))


def methods() -> list[str]:
    """Projections available here: ['PCA'] plus 't-SNE' when scikit-learn is installed."""
    return ["PCA"] + (["t-SNE"] if importlib.util.find_spec("sklearn") is not None else [])


def pca(x: np.ndarray, dims: int = 2) -> np.ndarray:
    """Rows of x [N, d] on their top `dims` principal axes, [N, dims] (sign fixed: largest |loading| positive)."""
    x = np.asarray(x, np.float64)
    centred = x - x.mean(0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    axes = vt[:dims]                                                             # (dims, d)
    signs = np.sign(axes[np.arange(len(axes)), np.abs(axes).argmax(1)])
    return centred @ (axes * signs[:, None]).T


def project(q: np.ndarray, k: np.ndarray, method: str = "PCA", seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Normalised queries and keys embedded jointly in 2-D: (q2 [Nq, 2], k2 [Nk, 2])."""
    if method not in methods():
        raise UserError(f"Projection '{method}' is not available here: choose one of {', '.join(methods())}.")
    qn, kn = normalise(q, k)
    both = np.concatenate([qn, kn])
    if method == "PCA":
        xy = pca(both)
    else:
        from sklearn.manifold import TSNE

        perplexity = min(30.0, max(2.0, (len(both) - 1) / 3))
        xy = TSNE(2, init="pca", random_state=seed, perplexity=perplexity, max_iter=500).fit_transform(both)
    return xy[: len(qn)], xy[len(qn):]

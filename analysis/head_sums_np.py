"""analysis.head_sums in plain numpy, for the sizes a page scores: the same sums, without importing numba.

Importing numba and loading its compiled loop adds about 100 MB to a process for good; at a sentence's size
(MiniLM's 72 heads at 16 tokens: 18k weights) numpy does the same work in well under a millisecond, so
analysis.patterns takes this path below COMPILED weights and the compiled one (faster, on threads) above. Each
layer is read in float64 (a copy of one layer, never of the whole trace): the entropy from one log, the key
columns from the column sums, the previous/next/self rows from diagonals, the rest against a [T, T] table. Sums
are float64 and equal analysis.head_sums' within about 1e-7 relative (its float32 log and per-row float32 sums are
the difference); all NaN for a head with a NaN weight, as there. Numbers measured on 2 cores: numpy takes 1 ms
at 18k weights and 30 ms at 2.4M (the compiled pass 0.2 and 6 ms, plus its import), 2.8 s at 38M (0.08 s).

Does not divide by the number of queries (analysis.patterns does) and does not run a model.

    sums(w [L, H, T, T], keys [C, T], same [T, T], after [T, T]) -> [L, H, 1 + C + len(ROWS)] float64
"""
from __future__ import annotations

import numpy as np

ROWS = ("previous token", "next token", "self", "same token", "distance", "induction")  # after the key columns
COMPILED = 1 << 22  # weights of at least this many elements go to the compiled pass (analysis.head_sums)


def fit(n_q: int, n_k: int, keys: np.ndarray, same: np.ndarray, after: np.ndarray) -> None:
    """Refuse tables that do not fit attention of n_q × n_k tokens (the compiled loop checks no bounds)."""
    if keys.shape[-1] != n_k or same.shape != (n_q, n_k) or after.shape != (n_q, n_k):
        raise ValueError(f"Tables of {same.shape} and {keys.shape[-1]} keys do not fit attention of {n_q} × {n_k} "
                         "tokens: give one token per query and per key.")


def sums(weights: np.ndarray, keys: np.ndarray, same: np.ndarray, after: np.ndarray) -> np.ndarray:
    """analysis.head_sums.sums in numpy: per head [Σ A log A, Σ A · keys[c, j] for each c, then ROWS], float64."""
    n_layers, n_heads, n_q, n_k = weights.shape
    fit(n_q, n_k, keys, same, after)
    n_keys = len(keys)
    keys = np.asarray(keys, dtype=np.float64)                                                   # (C, Tk)
    distance = np.abs(np.arange(n_q)[:, None] - np.arange(n_k)[None, :]).astype(np.float64)      # (Tq, Tk)
    tables = [np.asarray(t, dtype=np.float64) for t in (same, distance, after)]                # each (Tq, Tk)
    out = np.empty((n_layers, n_heads, 1 + n_keys + len(ROWS)))                               # (L, H, 1 + C + 6)
    for layer in range(n_layers):
        a = weights[layer].astype(np.float64)                                                   # (H, Tq, Tk)
        out[layer, :, 0] = np.einsum("hij,hij->h", a, np.log(np.where(a > 0, a, 1)))            # 0 log 0 = 0
        out[layer, :, 1:1 + n_keys] = a.sum(1) @ keys.T                                         # (H, C)
        r = 1 + n_keys
        for k, offset in enumerate((-1, 1, 0)):  # a[i, i - 1], a[i, i + 1], a[i, i] where the key exists
            out[layer, :, r + k] = np.diagonal(a, offset, 1, 2).sum(-1)
        for k, table in zip((3, 4, 5), tables):  # same token, distance, induction
            out[layer, :, r + k] = np.einsum("hij,ij->h", a, table)
    out[np.isnan(out[..., 0])] = np.nan                                     # a NaN weight: every sum of its head
    return out

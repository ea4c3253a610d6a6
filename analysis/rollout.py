"""Attention rollout (Abnar & Zuidema 2020): how much each top-layer token draws on each input token.

It fuses the heads of every layer, mixes in the residual stream as an identity matrix and multiplies
the layers together. It does not look at values, MLPs or layer norms: it is a picture of attention
weights only, and it needs square (self or causal) attention; cross-attention has no residual path.

    fuse_heads(weights, "mean") -> [L, T, T]
    mix_residual(A, 0.5)        -> (1 - 0.5) * A + 0.5 * I, rows renormalised
    rollout(weights)            -> R = A^_L ... A^_1, [T, T], rows sum to 1
"""
from __future__ import annotations

import numpy as np

FUSIONS = ("mean", "max", "min")


def fuse_heads(weights: np.ndarray, fusion: str = "mean") -> np.ndarray:
    """Fuse the head axis of [L, H, Tq, Tk] weights by mean, max or min -> [L, Tq, Tk] float64."""
    if fusion not in FUSIONS:
        raise ValueError(f"fusion must be one of {FUSIONS}, not {fusion!r}")
    w = np.asarray(weights, dtype=np.float64)  # (L, H, Tq, Tk)
    if w.ndim != 4:
        raise ValueError(f"weights must be [layers, heads, tokens, tokens], got shape {w.shape}")
    return getattr(w, fusion)(axis=1)  # (L, Tq, Tk)


def mix_residual(fused: np.ndarray, residual: float = 0.5) -> np.ndarray:
    """A^ = (1 - residual) * A + residual * I per layer, rows renormalised; [L, T, T] -> [L, T, T].

    A row that is all zero (possible with min fusion and residual 0) stays zero: it attends nowhere.
    """
    if not 0.0 <= residual <= 1.0:
        raise ValueError(f"residual must be between 0 and 1, not {residual}")
    a = np.asarray(fused, dtype=np.float64)  # (L, T, T)
    if a.ndim != 3 or a.shape[1] != a.shape[2]:
        raise ValueError(
            f"rollout and flow need square self-attention, got {a.shape[1]} x {a.shape[2]} "
            "(cross-attention has no residual path through the layers)"
        )
    mixed = (1.0 - residual) * a + residual * np.eye(a.shape[1])  # (L, T, T)
    sums = mixed.sum(axis=-1, keepdims=True)  # (L, T, 1)
    return np.divide(mixed, sums, out=np.zeros_like(mixed), where=sums > 0)


def residual_attention(weights: np.ndarray, residual: float = 0.5, fusion: str = "mean") -> np.ndarray:
    """[L, H, T, T] attention -> [L, T, T] matrices A^ that rollout and flow are built from."""
    return mix_residual(fuse_heads(weights, fusion), residual)


def rollout(weights: np.ndarray, residual: float = 0.5, fusion: str = "mean") -> np.ndarray:
    """R = A^_L ... A^_1 -> [T, T]: row i is how top-layer token i mixes the input tokens."""
    a_hat = residual_attention(weights, residual, fusion)  # (L, T, T)
    joint = a_hat[0]  # (T, T)
    for layer in a_hat[1:]:
        joint = layer @ joint  # (T, T): the newer layer reads the mixture below it
    return joint
